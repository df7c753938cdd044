package dev.retsu.lock.examples.reportjob;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.testing.DocsSql;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.nio.file.Path;
import java.sql.SQLException;
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
    return start(db, id, key, "retsu.lock.leaders.report.refresh-interval=200ms");
  }

  private static ConfigurableApplicationContext start(
      TestDatabase db, String id, long key, String refresh) {
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
            refresh,
            "report.interval=PT0.05S")
        .run();
  }

  @Test
  void theExampleJobRunsOnTheLeaderOnlyAndMovesWhenItStops(TestDatabase db) throws Exception {
    createReportRun(db);
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

  /**
   * A tight {@code @Scheduled @LeaderOnly} job on the leader, with the starter's defaults (the
   * leader's loop refreshes every 15 s and idles on its session in between): every run gets the
   * session at once, so runs follow each other every 50 ms plus a statement, never a heartbeat's
   * wait for the idle loop to let go (the bound asserted is the library's hand-off, one 10 ms
   * slice, with room for a loaded machine).
   */
  @Test
  void aTightScheduledLeaderOnlyJobOnTheLeaderIsNeverStarvedByTheIdleLoop(TestDatabase db)
      throws Exception {
    createReportRun(db);
    long key = KEYS.incrementAndGet();
    try (ConfigurableApplicationContext a =
        start(db, "tight-a", key, "retsu.lock.leaders.report.retry-interval=200ms")) {
      await().atMost(Duration.ofSeconds(20)).until(() -> rows(db, "tight-a") >= 1);
      int first = rows(db, "tight-a");
      await().atMost(Duration.ofSeconds(20)).until(() -> rows(db, "tight-a") >= first + 40);
      assertThat(a.isActive()).isTrue();
    }
    int longestGapMs =
        db.queryInts(
                "SELECT coalesce(max(gap), 0)::int FROM (SELECT (extract(epoch FROM ran_at - lag(ran_at)"
                    + " OVER (ORDER BY ran_at)) * 1000) AS gap FROM report_run) g")
            .get(0);
    assertThat(longestGapMs)
        .as("the longest wait between two runs of a 50 ms job, in ms")
        .isLessThan(500);
  }

  private static int rows(TestDatabase db, String candidate) throws Exception {
    return db.queryInts("SELECT count(*)::int FROM report_run WHERE candidate = ?", candidate)
        .get(0);
  }

  /** The table as the Spring Boot page creates it: a reader runs that DDL, then the job. */
  private static void createReportRun(TestDatabase db) throws SQLException {
    db.execute("DROP TABLE IF EXISTS report_run");
    db.execute(DocsSql.createTable(Path.of("../docs/spring-boot.md"), "report_run"));
  }
}
