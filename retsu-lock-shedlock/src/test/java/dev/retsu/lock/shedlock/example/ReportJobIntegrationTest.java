package dev.retsu.lock.shedlock.example;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.testing.DocsSql;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.ReadmeSnippets;
import dev.retsu.lock.testing.TestDatabase;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.core.env.MapPropertySource;

/**
 * The {@code @SchedulerLock} example, run as two nodes (two Spring contexts, two pools) on one
 * database: the job runs, never on both nodes at once, and its rows come from the lock's sessions.
 */
@ExtendWith(PostgresExtension.class)
class ReportJobIntegrationTest {

  private static final Path PAGE = Path.of("../docs/shedlock.md");

  @Test
  void docsShowExactlyTheExampleThatRuns() {
    assertThat(
            ReadmeSnippets.verify(
                PAGE,
                "shedlock",
                Path.of(
                    "src/test/java/dev/retsu/lock/shedlock/example/ReportJobConfiguration.java"),
                Path.of("src/test/java/dev/retsu/lock/shedlock/example/ReportJob.java")))
        .containsExactly("shedlock/configuration", "shedlock/job");
  }

  @Test
  void scheduledJobRunsOnOneNodeAtATimeOnTheLocksSession(TestDatabase db) throws Exception {
    db.execute(DocsSql.createTable(PAGE, "nightly_report_run")); // as the page creates it
    try (HikariDataSource poolA = pool(db, "node-a");
        HikariDataSource poolB = pool(db, "node-b");
        AnnotationConfigApplicationContext nodeA = node(poolA);
        AnnotationConfigApplicationContext nodeB = node(poolB)) {
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> db.queryInts("SELECT count(*)::int FROM nightly_report_run").get(0) >= 20);
      assertThat(nodeA.isRunning() && nodeB.isRunning()).isTrue();
    }
    // No run started before the previous one ended, whichever node ran them.
    assertThat(
            db.queryInts(
                "SELECT count(*)::int FROM (SELECT started_at, lag(ended_at) OVER (ORDER BY"
                    + " started_at) AS previous_end FROM nightly_report_run) r"
                    + " WHERE started_at < previous_end"))
        .containsExactly(0);
    // Every row was written on a lock session (application_name retsu-lock:<candidate>).
    assertThat(
            db.queryInts(
                "SELECT count(*)::int FROM nightly_report_run WHERE holder NOT LIKE 'retsu-lock:%'"))
        .containsExactly(0);
  }

  private static AnnotationConfigApplicationContext node(DataSource dataSource) {
    AnnotationConfigApplicationContext ctx = new AnnotationConfigApplicationContext();
    ctx.getEnvironment()
        .getPropertySources()
        .addFirst(new MapPropertySource("test", Map.of("report.interval", "PT0.1S")));
    ctx.registerBean(DataSource.class, () -> dataSource);
    ctx.register(ReportJobConfiguration.class);
    ctx.refresh();
    return ctx;
  }

  private static HikariDataSource pool(TestDatabase db, String node) {
    HikariConfig c = new HikariConfig();
    c.setPoolName("retsu-lock-shedlock-" + node);
    c.setJdbcUrl(db.jdbcUrl());
    c.setUsername(db.user());
    c.setPassword(db.password());
    c.setMaximumPoolSize(4);
    return new HikariDataSource(c);
  }
}
