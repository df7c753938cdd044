package dev.retsu.lock.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.TakeoverMode;
import dev.retsu.lock.examples.collector.QueueStateCollector;
import dev.retsu.lock.examples.collector.Schema;
import dev.retsu.lock.testing.PostgresExtension;
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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Runs the real collector and checks that every series the dashboard and the collector's part of
 * the examples' README (its alert rules, its endpoint table) query is one the collector exports.
 * {@link DocsSnippetsTest} keeps the README's snippets equal to the code that runs.
 */
@ExtendWith(PostgresExtension.class)
class ReadmeSnippetsIntegrationTest {

  private static final Pattern METRIC =
      Pattern.compile("\\b((?:retsu_lock|queue_messages|queue_oldest|queue_state)_[a-z_]+)\\b");

  @Test
  void theCollectorExportsWhatTheDashboardAndTheAlertsQuery(TestDatabase db) throws Exception {
    try (Connection c = db.connect()) {
      Schema.migrate(c);
    }
    db.execute(
        "TRUNCATE retsu_queue_message; TRUNCATE retsu_queue_state;"
            + " INSERT INTO retsu_queue_message (queue, state) VALUES ('orders', 'ready')");
    HikariConfig hikari = new HikariConfig();
    hikari.setPoolName("retsu-lock-examples-test");
    hikari.setJdbcUrl(db.jdbcUrl());
    hikari.setUsername(db.user());
    hikari.setPassword(db.password());
    hikari.setMaximumPoolSize(4);
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    try (HikariDataSource pool = new HikariDataSource(hikari)) {
      QueueStateCollector collector =
          new QueueStateCollector(
              pool,
              registry,
              "collector-a",
              Duration.ofSeconds(15),
              TakeoverMode.POLL,
              LeaderListener.NO_OP);
      CompletableFuture<Void> done = collector.start();
      try {
        await()
            .atMost(Duration.ofSeconds(30))
            .until(() -> registry.scrape().contains("queue_messages_ready{queue=\"orders\"} 1.0"));
        String scrape = registry.scrape();
        assertThat(scrape).containsPattern("retsu_lock_leader\\{[^}]*state=\"leader\"[^}]*} 1.0");
        // The dashboard and the examples' README query only series a leader exports.
        Set<String> queried = new TreeSet<>();
        queried.addAll(metricNames(Files.readString(Path.of("grafana/retsu-lock-dashboard.json"))));
        queried.addAll(metricNames(collectorSection()));
        assertThat(queried)
            .contains("queue_messages_ready", "retsu_lock_leader", "queue_state_collection_success")
            .allSatisfy(name -> assertThat(scrape).contains("\n" + name));
      } finally {
        collector.close();
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

  private static String collectorSection() throws Exception {
    String readme = Files.readString(Path.of("README.md"));
    return readme.substring(readme.indexOf("## The queue state-metrics collector"));
  }
}
