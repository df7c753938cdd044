package dev.retsu.lock.examples.quickstart;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * The smallest complete leader. Start it twice against one database: one copy leads and does the
 * job every 5 s, the other waits; stop the leader (Ctrl-C) and the other takes over within 5 s.
 */
public final class Quickstart {

  private Quickstart() {}

  /**
   * Runs until SIGTERM or Ctrl-C; exits 1 if the loop gives up (e.g. no database at the start).
   *
   * @param args none; the database comes from RETSU_DATABASE__URL, __USER and __PASSWORD
   */
  public static void main(String[] args) {
    // snippet:examples/quickstart
    HikariConfig config = new HikariConfig();
    config.setPoolName("retsu-lock-quickstart");
    config.setJdbcUrl(System.getenv("RETSU_DATABASE__URL")); // jdbc:postgresql://host:5432/db
    config.setUsername(System.getenv("RETSU_DATABASE__USER"));
    config.setPassword(System.getenv("RETSU_DATABASE__PASSWORD"));
    config.setMaximumPoolSize(4); // the leader keeps one connection for its whole term
    HikariDataSource pool = new HikariDataSource(config);

    LeaderLoop loop =
        LeaderLoop.builder(pool, LockKey.named("examples", "quickstart"))
            .retryInterval(Duration.ofSeconds(5)) // how often a standby tries the lock
            .refreshInterval(Duration.ofSeconds(5)) // how often the leader runs the task
            .listener(
                new LeaderListener() {
                  @Override
                  public void onAcquired(Term term) {
                    System.out.println(
                        "leading: fencing token "
                            + term.fencingToken()
                            + ", backend pid "
                            + term.backendPid());
                  }

                  @Override
                  public void onLost(Term term, LossReason reason, Throwable cause) {
                    System.out.println("stopped leading: " + reason);
                  }
                })
            .build();

    CompletableFuture<Void> done =
        loop.start(
            ctx -> {
              long sessions; // read on the lock's own session, never on another pooled one
              try (Statement s = ctx.connection().createStatement();
                  ResultSet rs = s.executeQuery("SELECT count(*) FROM pg_stat_activity")) {
                rs.next();
                sessions = rs.getLong(1);
              }
              ctx.ensureLeader(); // right before the effect: throws once the term is over
              System.out.println(
                  "job done: " + sessions + " sessions, token " + ctx.fencingToken());
            });
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  loop.close(); // stops the task, tells the listener, then releases the lock
                  pool.close();
                },
                "retsu-lock-quickstart-shutdown"));
    try {
      done.join(); // returns once close() has stopped the loop
    } catch (CompletionException e) { // the loop gave up: nobody here contends any more
      System.err.println("leader loop failed: " + e.getCause());
      System.exit(1);
    }
    // end-snippet
  }
}
