package dev.retsu.lock.examples.reportjob;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;

/**
 * The docs' example ({@link ReportJobConfiguration}) as two applications on the real PostgreSQL:
 * only the leader's job writes, and when it stops the other one's job takes over.
 */
@ExtendWith(PostgresExtension.class)
class ReportJobConfigurationIntegrationTest {

  private static final AtomicLong KEYS = new AtomicLong(9_400_000);

  /** An application: Spring Boot's auto-configuration plus the example. */
  @Configuration(proxyBeanMethods = false)
  @EnableAutoConfiguration
  @Import(ReportJobConfiguration.class)
  static class App {}

  private static ConfigurableApplicationContext start(TestDatabase db, String id, long key) {
    return new SpringApplicationBuilder(App.class)
        .web(WebApplicationType.NONE)
        .properties(
            "spring.main.banner-mode=off",
            "spring.datasource.url=" + db.jdbcUrl(),
            "spring.datasource.username=" + db.user(),
            "spring.datasource.password=" + db.password(),
            "retsu.lock.candidate-id=" + id,
            "retsu.lock.leaders.report.key.value=" + key,
            "retsu.lock.leaders.report.retry-interval=200ms",
            "retsu.lock.leaders.report.refresh-interval=200ms",
            "report.interval=PT0.05S")
        .run();
  }

  @Test
  void theExampleJobRunsOnTheLeaderOnlyAndMovesWhenItStops(TestDatabase db) throws Exception {
    db.execute(
        "DROP TABLE IF EXISTS report_run;"
            + " CREATE TABLE report_run (candidate text NOT NULL, ran_at timestamptz NOT NULL)");
    long key = KEYS.incrementAndGet();
    ConfigurableApplicationContext a = start(db, "report-a", key);
    try (ConfigurableApplicationContext b = start(db, "report-b", key)) {
      try {
        await().atMost(Duration.ofSeconds(20)).until(() -> rows(db, "report-a") >= 3);
        assertThat(rows(db, "report-b")).isZero();
        assertThat(b.isActive()).isTrue(); // a standby: scheduled, skipped
      } finally {
        a.close(); // graceful: its job stops, then the lock is released
      }
      int aFinal = rows(db, "report-a");
      await().atMost(Duration.ofSeconds(20)).until(() -> rows(db, "report-b") >= 3);
      assertThat(rows(db, "report-a")).isEqualTo(aFinal);
    }
  }

  private static int rows(TestDatabase db, String candidate) throws Exception {
    return db.queryInts("SELECT count(*)::int FROM report_run WHERE candidate = ?", candidate)
        .get(0);
  }
}
