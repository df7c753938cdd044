package dev.retsu.lock.examples.collector;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LeadershipLostException;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.TakeoverMode;
import dev.retsu.lock.examples.http.LeaderStatus;
import dev.retsu.lock.examples.http.ManagementServer;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.URI;
import java.sql.Connection;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The collector as the {@code collector} command runs it, in this JVM: it keeps {@code
 * FailurePolicy.EXIT} (core's default is {@code STEP_DOWN}), and its {@code /health/ready} is 200
 * only while the loop runs: not before it starts, not once it has FAILED or is CLOSED.
 */
@ExtendWith(PostgresExtension.class)
class QueueStateCollectorIntegrationTest {

  private static final Duration LEAD = Duration.ofSeconds(30);

  private final PrometheusMeterRegistry registry =
      new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private HikariDataSource pool;
  private QueueStateCollector collector;
  private ManagementServer management;

  @BeforeEach
  void start(TestDatabase db) throws Exception {
    try (Connection c = db.connect()) {
      Schema.migrate(c);
    }
    db.execute(
        "TRUNCATE retsu_queue_message; TRUNCATE retsu_queue_state;"
            + " INSERT INTO retsu_queue_message (queue, state) VALUES ('orders', 'ready')");
    HikariConfig config = new HikariConfig();
    config.setPoolName("retsu-lock-examples-test");
    config.setJdbcUrl(db.jdbcUrl());
    config.setUsername(db.user());
    config.setPassword(db.password());
    config.setMaximumPoolSize(4);
    pool = new HikariDataSource(config);
    collector =
        new QueueStateCollector(
            pool,
            registry,
            "collector-r",
            Duration.ofSeconds(1),
            TakeoverMode.POLL,
            LeaderListener.NO_OP);
    // The same suppliers as the collector command's.
    management =
        ManagementServer.start(
            "127.0.0.1",
            0,
            registry,
            () ->
                LeaderStatus.json(
                    collector.loop(),
                    collector.isExporting(),
                    Duration.ofSeconds(1),
                    TakeoverMode.POLL),
            () -> LeaderStatus.isReady(collector.loop()));
  }

  @AfterEach
  void stop(TestDatabase db) throws Exception {
    management.close();
    collector.close();
    pool.close();
    db.execute("ALTER TABLE IF EXISTS retsu_queue_state_gone RENAME TO retsu_queue_state");
  }

  @Test
  void aFailedRefreshEndsTheLoopUnderExitAndReadinessGoesDown(TestDatabase db) throws Exception {
    assertThat(collector.loop().state()).isEqualTo(LeaderLoop.State.NEW);
    assertThat(status("/health/ready")).isEqualTo(503);

    CompletableFuture<Void> done = collector.start();
    await("leading and exporting").atMost(LEAD).until(collector::isExporting);
    assertThat(status("/health/ready")).isEqualTo(200);

    // The state query's table goes away: the next refresh fails.
    db.execute("ALTER TABLE retsu_queue_state RENAME TO retsu_queue_state_gone");

    await("the loop ends").atMost(LEAD).until(done::isDone);
    assertThat(done)
        .failsWithin(Duration.ZERO)
        .withThrowableOfType(ExecutionException.class)
        .havingCause()
        .isInstanceOfSatisfying(
            LeadershipLostException.class,
            e -> assertThat(e.reason()).isEqualTo(LossReason.REFRESH_FAILED));
    // Under STEP_DOWN the loop would be RUNNING again, contending after a backoff.
    assertThat(collector.loop().state()).isEqualTo(LeaderLoop.State.FAILED);
    assertThat(status("/health/ready")).isEqualTo(503);
    assertThat(ManagementServer.fetch(management.port(), "/leader"))
        .contains("\"role\":\"failed\"");
    assertThat(registry.scrape()).doesNotContain("queue_messages_ready");
    assertThat(db.advisoryLockHolders()).isEmpty();
  }

  @Test
  void aClosedCollectorIsNotReady(TestDatabase db) throws Exception {
    CompletableFuture<Void> done = collector.start();
    await("leading").atMost(LEAD).until(collector::isExporting);
    assertThat(status("/health/ready")).isEqualTo(200);

    collector.close();

    assertThat(done).succeedsWithin(LEAD);
    assertThat(collector.loop().state()).isEqualTo(LeaderLoop.State.CLOSED);
    assertThat(status("/health/ready")).isEqualTo(503);
    assertThat(ManagementServer.fetch(management.port(), "/leader"))
        .contains("\"role\":\"stopped\"");
    assertThat(db.advisoryLockHolders()).isEmpty();
  }

  private int status(String path) throws IOException {
    HttpURLConnection c =
        (HttpURLConnection)
            URI.create("http://127.0.0.1:" + management.port() + path).toURL().openConnection();
    c.setConnectTimeout(2000);
    c.setReadTimeout(5000);
    try {
      return c.getResponseCode();
    } finally {
      c.disconnect();
    }
  }
}
