package dev.retsu.lock.micrometer;

import static dev.retsu.lock.micrometer.TestTerms.samples;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.testing.DocsSql;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The micrometer snippets of docs/metrics.md, compiled and run here; {@link DocsSnippetsTest} keeps
 * the page identical to these regions.
 */
@ExtendWith(PostgresExtension.class)
class ReadmeSnippetsIntegrationTest {

  @Test
  void wiring(TestDatabase db) throws Exception {
    db.execute( // the table as the metrics page creates it
        DocsSql.createTable(Path.of("../docs/metrics.md"), "queue_state"));
    db.execute("INSERT INTO queue_state VALUES ('orders', 12, 3, 2, 1, 4.5)");
    DataSource dataSource = db.dataSource();
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    // snippet:micrometer/wiring
    LockKey key = LockKey.named("retsu", "queue-state-collector");
    LeaderLoop loop = LeaderLoop.builder(dataSource, key).candidateId("collector-1").build();
    LeaderMetrics leaderMetrics = LeaderMetrics.builder(loop).lockName("queue-state").build();
    QueueStateMetrics queueMetrics = QueueStateMetrics.builder(loop).maxQueueSeries(200).build();
    leaderMetrics.bindTo(registry); // subscribes to the loop; every replica exports its leadership
    queueMetrics.bindTo(registry); // subscribes too; registers nothing until this replica leads
    loop.start(ctx -> queueMetrics.record(ctx.withConnection(QueueStateCollector::collect)));
    // end-snippet
    try {
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> samples(registry, "queue_messages_ready{").size() == 1);
      assertThat(registry.scrape())
          .contains("queue_messages_ready{queue=\"orders\"} 12.0")
          .contains(
              "retsu_lock_leader{candidate=\"collector-1\",lock=\"queue-state\",state=\"leader\"}"
                  + " 1.0");
    } finally {
      loop.close();
    }
    assertThat(samples(registry, "queue_")).isEmpty();
    leaderMetrics.close();
    queueMetrics.close();
    assertThat(registry.getMeters()).isEmpty();
  }

  @Test
  void jobMetrics(TestDatabase db) throws Exception {
    DataSource dataSource = db.dataSource();
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    LeaderLoop loop =
        LeaderLoop.builder(dataSource, LockKey.named("retsu", "job-metrics"))
            .candidateId("node-1")
            .refreshInterval(Duration.ofMillis(100))
            .build();
    // snippet:micrometer/job
    LeaderJobMetrics jobs = LeaderJobMetrics.builder("billing", loop.candidateId()).build();
    jobs.bindTo(registry);
    LeaderJobMetrics.Job sendInvoices = jobs.job("send-invoices"); // at 0 on every replica now
    loop.start(
        ctx -> {
          long start = System.nanoTime();
          try {
            ctx.ensureLeader(); // your job's work, on ctx.connection()
            sendInvoices.succeeded(Duration.ofNanos(System.nanoTime() - start));
          } catch (RuntimeException e) {
            sendInvoices.failed(Duration.ofNanos(System.nanoTime() - start), e);
            throw e;
          }
        });
    // end-snippet
    try {
      await()
          .atMost(Duration.ofSeconds(30))
          .until(
              () ->
                  registry
                      .scrape()
                      .matches(
                          "(?s).*retsu_lock_job_runs_total\\{[^}]*job=\"send-invoices\""
                              + "[^}]*outcome=\"success\"[^}]*} [1-9].*"));
      assertThat(registry.scrape())
          .containsPattern(
              "retsu_lock_job_runs_total\\{[^}]*job=\"send-invoices\"[^}]*outcome=\"failure\""
                  + "[^}]*} 0.0")
          .containsPattern("retsu_lock_job_last_success_seconds\\{[^}]*} [1-9]");
    } finally {
      loop.close();
      jobs.close();
    }
    assertThat(registry.getMeters()).isEmpty();
  }

  /** What the README calls the collector: reads queue state on the leader's session. */
  static final class QueueStateCollector {
    private QueueStateCollector() {}

    // snippet:micrometer/collect
    static QueueStateSnapshot collect(Connection connection) throws SQLException {
      long started = System.nanoTime();
      QueueStateSnapshot.Builder snapshot = QueueStateSnapshot.builder();
      try (Statement s = connection.createStatement();
          ResultSet rs =
              s.executeQuery(
                  "SELECT name, ready, in_flight, scheduled, dead, oldest_ready_age_seconds"
                      + " FROM queue_state")) {
        while (rs.next()) {
          snapshot.queue(
              rs.getString(1),
              rs.getLong(2),
              rs.getLong(3),
              rs.getLong(4),
              rs.getLong(5),
              rs.getDouble(6));
        }
      }
      return snapshot.collectionDuration(Duration.ofNanos(System.nanoTime() - started)).build();
    }
    // end-snippet
  }
}
