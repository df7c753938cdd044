package dev.retsu.lock.examples.group;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.LeaderGroup;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import dev.retsu.lock.micrometer.LeaderGroupMetrics;
import dev.retsu.lock.micrometer.Names;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A {@link LeaderGroup} member: 16 partitions shared fairly by every running copy. Each partition's
 * task runs on the copy that owns it, on the session that holds its key, and records its run with a
 * write that the term's fencing token guards. Start two copies: each owns 8; stop one (Ctrl-C) and
 * the other owns all 16 within seconds.
 */
public final class PartitionedWorkers {

  private PartitionedWorkers() {}

  /**
   * Runs until SIGTERM or Ctrl-C, printing how many partitions this copy owns every 5 s.
   *
   * @param args none; the database comes from RETSU_DATABASE__URL, __USER and __PASSWORD
   * @throws SQLException when the table cannot be created
   * @throws InterruptedException when the main thread is interrupted
   */
  public static void main(String[] args)
      throws SQLException, InterruptedException, ExecutionException {
    HikariConfig config = new HikariConfig();
    config.setPoolName("retsu-lock-group-example");
    config.setJdbcUrl(System.getenv("RETSU_DATABASE__URL")); // jdbc:postgresql://host:5432/db
    config.setUsername(System.getenv("RETSU_DATABASE__USER"));
    config.setPassword(System.getenv("RETSU_DATABASE__PASSWORD"));
    HikariDataSource dataSource = new HikariDataSource(config);
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      c.setAutoCommit(false); // copies that start together create the table one at a time
      s.execute("SELECT pg_advisory_xact_lock(hashtext('partition_owner'))");
      s.execute(
          "CREATE TABLE IF NOT EXISTS partition_owner (partition int PRIMARY KEY, member text,"
              + " token text COLLATE \"C\", runs bigint)");
      c.commit();
    }
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);

    // snippet:examples/group
    LeaderGroup group =
        LeaderGroup.partitioned(dataSource, "partitions", 16) // keys ("partitions", "0".."15")
            .refreshInterval(Duration.ofSeconds(5)) // each owned partition's task, every 5 s
            .listener(
                new LeaderListener() {
                  @Override
                  public void onAcquired(Term term) {
                    System.out.println("owning " + term.key() + ", token " + term.fencingToken());
                  }

                  @Override
                  public void onLost(Term term, LossReason reason, Throwable cause) {
                    System.out.println("released " + term.key() + ": " + reason);
                  }
                })
            .build();
    LeaderGroupMetrics metrics = LeaderGroupMetrics.of(group); // retsu_lock_group_* series
    metrics.bindTo(registry);
    CompletableFuture<Void> done = // completes when the group is closed, or failed
        group.start(
            ctx -> { // for each partition this copy owns, on the session that holds its key
              int partition = group.keys().indexOf(ctx.term().key()); // 0..15
              try (PreparedStatement ps =
                  ctx.connection()
                      .prepareStatement(
                          "INSERT INTO partition_owner VALUES (?, ?, ?, 1) ON CONFLICT (partition)"
                              + " DO UPDATE SET member = excluded.member, token = excluded.token,"
                              + " runs = partition_owner.runs + 1"
                              + " WHERE partition_owner.token <= excluded.token")) {
                // the WHERE: a stale term's write changes nothing
                ps.setInt(1, partition);
                ps.setString(2, group.candidateId());
                ps.setString(3, ctx.fencingToken().toString()); // sorts like the token
                ctx.ensureLeader(); // right before the effect: throws once the key's term is over
                ps.executeUpdate();
              }
            });
    // end-snippet
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  group.close(); // every key's work stops, onLost per key, then the sessions end
                  metrics.close(); // removes exactly the meters it registered
                  dataSource.close();
                },
                "retsu-lock-group-example-shutdown"));
    System.out.println("member " + group.candidateId() + " of group " + group.name());
    while (true) { // until the shutdown hook closes the group; a failure ends main with its cause
      try {
        done.get(5, TimeUnit.SECONDS);
        return;
      } catch (TimeoutException stillRunning) {
        // print what a /metrics scrape would show
      }
      Gauge held = registry.find(Names.GROUP_KEYS_HELD).gauge();
      Gauge members = registry.find(Names.GROUP_MEMBERS).gauge();
      if (held != null && members != null) { // null once the shutdown hook closed the metrics
        System.out.printf(
            "holding %.0f of 16 partitions, %.0f members%n", held.value(), members.value());
      }
    }
  }
}
