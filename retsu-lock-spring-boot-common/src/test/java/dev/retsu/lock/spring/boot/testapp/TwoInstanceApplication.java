package dev.retsu.lock.spring.boot.testapp;

import dev.retsu.lock.LeaderTask;
import dev.retsu.lock.micrometer.QueueStateMetrics;
import dev.retsu.lock.micrometer.QueueStateSnapshot;
import dev.retsu.lock.spring.boot.LeaderOnly;
import dev.retsu.lock.spring.boot.RetsuLeaders;
import java.sql.Connection;
import java.sql.Statement;
import javax.sql.DataSource;
import org.springframework.beans.factory.InitializingBean;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

/**
 * The application the two-instance test runs as separate JVMs on each Spring Boot line: one leader
 * {@code job}, whose task exports a leader-only gauge and whose {@code @Scheduled}
 * {@code @LeaderOnly} method stamps each run with the database's clock on the lock's session.
 * Written against the starter's API only, the same source for Boot 3.5 and 4.x.
 */
@SpringBootApplication(proxyBeanMethods = false)
@EnableScheduling
public class TwoInstanceApplication {

  /**
   * Starts the application; it exits when the test JVM that started it is gone.
   *
   * @param args Spring Boot arguments
   */
  public static void main(String[] args) {
    String parent = System.getenv("RETSU_TEST_PARENT_PID");
    if (parent != null) {
      ProcessHandle.of(Long.parseLong(parent))
          .ifPresent(p -> p.onExit().thenRun(() -> System.exit(1)));
    }
    SpringApplication.run(TwoInstanceApplication.class, args);
  }

  @Bean
  InitializingBean schema(DataSource dataSource) {
    return () -> {
      try (Connection c = dataSource.getConnection();
          Statement s = c.createStatement()) {
        c.setAutoCommit(false);
        s.execute("SELECT pg_advisory_xact_lock(42, 42)");
        s.execute(
            "CREATE TABLE IF NOT EXISTS retsu_boot_work (candidate text NOT NULL,"
                + " started timestamptz NOT NULL, finished timestamptz NOT NULL)");
        c.commit();
      }
    };
  }

  /** Gauges only the leader exports; a MeterBinder bean, bound by Spring Boot. */
  @Bean(destroyMethod = "close")
  QueueStateMetrics leaderOnlyGauges(RetsuLeaders leaders) {
    return QueueStateMetrics.of(leaders.get("job").loop().orElseThrow());
  }

  @Bean("job")
  LeaderTask job(QueueStateMetrics gauges) {
    return ctx -> {
      ctx.ensureLeader();
      gauges.record(QueueStateSnapshot.builder().queue("orders", 1, 0, 0, 0, 0.0).build());
    };
  }

  /** The leader-only job. */
  @Component
  static class Stamps {
    private final RetsuLeaders leaders;

    Stamps(RetsuLeaders leaders) {
      this.leaders = leaders;
    }

    @Scheduled(fixedDelay = 50)
    @LeaderOnly("job")
    public void stamp() {
      leaders
          .get("job")
          .jdbcTemplate()
          .update(
              "INSERT INTO retsu_boot_work (candidate, started, finished)"
                  + " SELECT ?, s, clock_timestamp()"
                  + " FROM (SELECT clock_timestamp() AS s, pg_sleep(0.05)) w",
              leaders.get("job").candidateId());
    }
  }
}
