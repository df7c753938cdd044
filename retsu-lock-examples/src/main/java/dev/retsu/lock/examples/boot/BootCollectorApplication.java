package dev.retsu.lock.examples.boot;

import dev.retsu.lock.LeaderTask;
import dev.retsu.lock.examples.collector.QueueStateQuery;
import dev.retsu.lock.examples.collector.Schema;
import dev.retsu.lock.micrometer.QueueStateMetrics;
import dev.retsu.lock.micrometer.QueueStateSnapshot;
import dev.retsu.lock.spring.boot.LeaderOnly;
import dev.retsu.lock.spring.boot.RetsuLeaders;
import java.sql.Connection;
import java.sql.Statement;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.sql.DataSource;
import org.springframework.beans.factory.InitializingBean;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

/**
 * The queue state-metrics collector as a Spring Boot application: the leader named {@code
 * queue-state} is configured in properties, its task reads the queue-state rollup on the lock's own
 * session and records the leader-only gauges, and Actuator shows {@code /actuator/health} ({@code
 * retsuLock}), {@code /actuator/prometheus} and {@code /actuator/leaders}.
 *
 * <pre>
 * java -cp &lt;class path&gt; dev.retsu.lock.examples.boot.BootCollectorApplication \
 *   --spring.datasource.url=jdbc:postgresql://localhost:5432/retsu --server.port=8081
 * </pre>
 */
@SpringBootApplication(proxyBeanMethods = false)
@EnableScheduling
public class BootCollectorApplication {

  /** The leader's name under {@code retsu.lock.leaders}. */
  public static final String LEADER = "queue-state";

  /**
   * Starts the application.
   *
   * @param args Spring Boot arguments, e.g. {@code --server.port=8081}
   */
  public static void main(String[] args) {
    exitWithParent();
    SpringApplication app = new SpringApplication(BootCollectorApplication.class);
    app.setDefaultProperties(defaults());
    app.run(args);
  }

  /** Tests and the demo start it as a child: it exits when its parent is gone. */
  private static void exitWithParent() {
    String parent = System.getenv("RETSU_EXAMPLES__PARENT_PID");
    if (parent != null) {
      ProcessHandle.of(Long.parseLong(parent))
          .ifPresent(p -> p.onExit().thenRun(() -> System.exit(1)));
    }
  }

  /** What an application.properties would hold; arguments and the environment override it. */
  static Map<String, Object> defaults() {
    Map<String, Object> p = new LinkedHashMap<>();

    p.put("retsu.lock.leaders.queue-state.key.first", Schema.KEY_NAMESPACE); // 'RETS'
    p.put("retsu.lock.leaders.queue-state.key.second", 1); // the collector's key
    p.put("retsu.lock.leaders.queue-state.refresh-interval", "15s");
    p.put("retsu.lock.leaders.queue-state.retry-interval", "15s");
    p.put("management.endpoints.web.exposure.include", "health,info,prometheus,leaders");
    p.put("management.endpoint.health.show-details", "always");

    p.put("spring.datasource.hikari.maximum-pool-size", 4);
    return p;
  }

  /**
   * Creates the schema (idempotent, under a transaction lock) when the context is built, so it
   * exists before the leader starts: leaders start after every singleton is created.
   */
  @Bean
  InitializingBean schema(DataSource dataSource) {
    return () -> {
      try (Connection c = dataSource.getConnection()) {
        Schema.migrate(c);
        c.setAutoCommit(false);
        try (Statement s = c.createStatement()) {
          s.execute(
              "SELECT pg_advisory_xact_lock("
                  + Schema.KEY_NAMESPACE
                  + ", "
                  + Schema.MIGRATION_KEY
                  + ")");
          s.execute(
              "CREATE TABLE IF NOT EXISTS retsu_boot_work (candidate text NOT NULL,"
                  + " started timestamptz NOT NULL, finished timestamptz NOT NULL)");
          c.commit();
        } finally {
          c.setAutoCommit(true);
        }
      }
    };
  }

  /**
   * Queue-state gauges that only the leader exports, on the leader's loop. A MeterBinder bean:
   * Spring Boot binds it to the registry.
   */
  @Bean(destroyMethod = "close")
  QueueStateMetrics queueGauges(RetsuLeaders leaders, InitializingBean schema) {
    return QueueStateMetrics.of(leaders.get(LEADER).loop().orElseThrow());
  }

  /** The leader's task, named like the leader: every refresh, on the lock's own session. */
  @Bean(LEADER)
  LeaderTask queueState(QueueStateMetrics gauges) {
    return ctx -> {
      QueueStateSnapshot snapshot = QueueStateQuery.read(ctx.connection());
      ctx.ensureLeader(); // right before the effect
      gauges.record(snapshot);
    };
  }

  /**
   * Leader-only scheduled work, as Spring code writes it: a {@code @Scheduled} method marked
   * {@code @LeaderOnly}, using the leader's {@code JdbcTemplate} (the lock's own session). It
   * stamps each run in {@code retsu_boot_work} with the database clock, so a test can check that no
   * two instances ever worked at once.
   */
  @Component
  static class WorkStamps {

    private final RetsuLeaders leaders;

    WorkStamps(RetsuLeaders leaders) {
      this.leaders = leaders;
    }

    @Scheduled(fixedDelayString = "${examples.boot.work-interval:1s}")
    @LeaderOnly(LEADER)
    public void stamp() {
      leaders
          .get(LEADER)
          .jdbcTemplate()
          .update(
              "INSERT INTO retsu_boot_work (candidate, started, finished)"
                  + " SELECT ?, s, clock_timestamp()"
                  + " FROM (SELECT clock_timestamp() AS s, pg_sleep(0.2)) w",
              leaders.get(LEADER).candidateId());
    }
  }
}
