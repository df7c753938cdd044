package dev.retsu.lock.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.FailurePolicy;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.examples.collector.QueueStateQuery;
import dev.retsu.lock.examples.collector.Schema;
import dev.retsu.lock.micrometer.LeaderMetrics;
import dev.retsu.lock.micrometer.QueueStateMetrics;
import dev.retsu.lock.micrometer.QueueStateSnapshot;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.ReadmeSnippets;
import dev.retsu.lock.testing.TestDatabase;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The README's examples snippets, compiled and run here; the first test keeps them identical. */
@ExtendWith(PostgresExtension.class)
class ReadmeSnippetsTest {

  private static final Pattern METRIC =
      Pattern.compile("\\b((?:retsu_lock|queue_messages|queue_oldest|queue_state)_[a-z_]+)\\b");

  @Test
  void readmeShowsExactlyTheCodeTestedHere() {
    assertThat(
            ReadmeSnippets.verify(
                Path.of("../README.md"),
                "examples",
                Path.of("src/test/java/dev/retsu/lock/examples/ReadmeSnippetsTest.java")))
        .containsExactly("examples/collector");
  }

  @Test
  void collectorWiring(TestDatabase db) throws Exception {
    try (Connection c = db.connect()) {
      Schema.migrate(c);
    }
    db.execute(
        "TRUNCATE retsu_queue_message; TRUNCATE retsu_queue_state;"
            + " INSERT INTO retsu_queue_message (queue, state) VALUES ('orders', 'ready')");
    HikariConfig hikari = new HikariConfig();
    hikari.setJdbcUrl(db.jdbcUrl());
    hikari.setUsername(db.user());
    hikari.setPassword(db.password());
    hikari.setMaximumPoolSize(10);
    try (HikariDataSource hikariPool = new HikariDataSource(hikari)) {
      DataSource pool = hikariPool;
      // snippet:examples/collector
      PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
      LockKey key = LockKey.of(0x52455453, 1); // ('RETS', 1): the collector's fixed key
      LeaderMetrics leadership =
          LeaderMetrics.builder(key, "collector-a").lockName("queue-state-collector").build();
      QueueStateMetrics queueGauges = QueueStateMetrics.create();
      leadership.bindTo(registry); // on every replica
      queueGauges.bindTo(registry); // registers nothing until this replica leads

      LeaderLoop loop =
          LeaderLoop.builder(pool, key) // HikariCP, size 10: the leader keeps one connection
              .candidateId("collector-a")
              .retryInterval(Duration.ofSeconds(15))
              .refreshInterval(Duration.ofSeconds(15))
              .failurePolicy(FailurePolicy.EXIT) // a failed refresh ends run(): exit non-zero
              .listener(leadership)
              .listener(queueGauges) // gauges removed before the lock is released
              .build();
      CompletableFuture<Void> done =
          loop.start(
              context -> {
                // The state query runs on the session that holds the lock, never on another one.
                QueueStateSnapshot snapshot = context.withConnection(QueueStateQuery::read);
                context.ensureLeader();
                queueGauges.record(snapshot);
              });
      // end-snippet
      try {
        await()
            .atMost(Duration.ofSeconds(30))
            .until(() -> registry.scrape().contains("queue_messages_ready{queue=\"orders\"} 1.0"));
        assertThat(registry.scrape())
            .containsPattern("retsu_lock_leader\\{[^}]*state=\"leader\"[^}]*} 1.0");
        // The dashboard and the README's alert rules query only series a leader exports.
        String scrape = registry.scrape();
        Set<String> queried = new TreeSet<>();
        queried.addAll(metricNames(Files.readString(Path.of("grafana/retsu-lock-dashboard.json"))));
        queried.addAll(metricNames(readmeSection()));
        assertThat(queried)
            .contains("queue_messages_ready", "retsu_lock_leader", "queue_state_collection_success")
            .allSatisfy(name -> assertThat(scrape).contains("\n" + name));
      } finally {
        loop.close();
      }
      done.join();
      assertThat(registry.scrape()).doesNotContain("queue_messages_ready");
    }
  }

  private static Set<String> metricNames(String text) {
    Set<String> out = new TreeSet<>();
    Matcher m = METRIC.matcher(text);
    while (m.find()) {
      out.add(m.group(1));
    }
    return out;
  }

  private static String readmeSection() throws Exception {
    String readme = Files.readString(Path.of("../README.md"));
    return readme.substring(
        readme.indexOf("<!-- section:examples -->"), readme.indexOf("<!-- /section:examples -->"));
  }
}
