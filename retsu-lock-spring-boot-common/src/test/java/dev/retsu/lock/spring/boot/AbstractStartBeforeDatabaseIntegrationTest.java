package dev.retsu.lock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.testing.ChildJvm;
import dev.retsu.lock.testing.EmbeddedPostgresServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.availability.AvailabilityChangeEvent;
import org.springframework.boot.availability.LivenessState;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ApplicationContext;
import org.springframework.context.ApplicationListener;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;

/**
 * A start during a database outage: the application (Boot's own DataSource auto-configuration and
 * pool, the starter's defaults) starts while PostgreSQL is down. It starts, stays a candidate
 * (health UP, the standby details say the database is unreachable, with the SQLState), and once a
 * real PostgreSQL comes up on that port it leads and runs its {@code @LeaderOnly} job; liveness is
 * never BROKEN. With the watch on, the same start succeeds, and the watch reports once the database
 * is up. Shared by both Spring Boot lines.
 */
public abstract class AbstractStartBeforeDatabaseIntegrationTest {

  /** The line under test. */
  protected final TestedBootLine line;

  /**
   * Creates the test for one line.
   *
   * @param line the line
   */
  protected AbstractStartBeforeDatabaseIntegrationTest(TestedBootLine line) {
    this.line = line;
  }

  @Test
  void anApplicationStartedBeforeItsDatabaseLeadsOnceTheDatabaseIsUp() {
    int port = ChildJvm.freePort();
    beforeTheDatabase(port)
        .withUserConfiguration(Job.class)
        .withPropertyValues(
            "spring.datasource.hikari.connection-timeout=1000",
            "retsu.lock.leaders.job.retry-interval=300ms",
            "retsu.lock.leaders.job.refresh-interval=300ms")
        .run(
            context -> {
              assertThat(context).hasNotFailed();
              RetsuLeader leader = context.getBean(RetsuLeaders.class).get("job");
              await()
                  .atMost(Duration.ofSeconds(20))
                  .until(() -> String.valueOf(standby(context)).contains("database-unreachable"));
              assertThat(standby(context).toString()).contains("SQLState 08001");
              assertThat(line.healthStatus(context)).isEqualTo("UP");
              assertThat(leader.isLeader()).isFalse();
              assertThat(context.getBean(Job.class).runs.get()).isZero();

              try (EmbeddedPostgresServer server =
                  EmbeddedPostgresServer.builder().port(port).start()) {
                await().atMost(Duration.ofSeconds(30)).until(leader::isLeader);
                Job job = context.getBean(Job.class);
                await().atMost(Duration.ofSeconds(10)).until(() -> job.runs.get() >= 2);
                assertThat(line.healthStatus(context)).isEqualTo("UP");
                assertThat(details(context)).containsEntry("role", "leader");
                assertThat(job.liveness).doesNotContain(LivenessState.BROKEN);
                context.close(); // releases the lock before the server stops
                assertThat(server.port()).isEqualTo(port);
              }
            });
  }

  @Test
  void withTheWatchOnAnApplicationStartedBeforeItsDatabaseStartsAndItsWatchReportsOnceItIsUp() {
    int port = ChildJvm.freePort();
    beforeTheDatabase(port)
        .withUserConfiguration(Changes.class)
        .withPropertyValues(
            "spring.datasource.hikari.connection-timeout=1000",
            "retsu.lock.watch.enabled=true",
            "retsu.lock.leaders.job.retry-interval=300ms",
            "retsu.lock.leaders.job.refresh-interval=300ms")
        .run(
            context -> {
              assertThat(context).hasNotFailed();
              RetsuLeaders leaders = context.getBean(RetsuLeaders.class);
              RetsuLeader leader = leaders.get("job");
              LeaderChangeEvents watch = leaders.changes().orElseThrow();
              await()
                  .atMost(Duration.ofSeconds(20))
                  .until(() -> String.valueOf(standby(context)).contains("database-unreachable"));
              assertThat(watch.connected()).isFalse();
              assertThat(line.healthStatus(context)).isEqualTo("UP");
              Changes changes = context.getBean(Changes.class);
              assertThat(changes.events).isEmpty();

              try (EmbeddedPostgresServer server =
                  EmbeddedPostgresServer.builder().port(port).start()) {
                await().atMost(Duration.ofSeconds(30)).until(leader::isLeader);
                await().atMost(Duration.ofSeconds(10)).until(watch::connected);
                await()
                    .atMost(Duration.ofSeconds(10))
                    .until(
                        () ->
                            changes.events.stream()
                                .anyMatch(e -> e.getName().equals("job") && e.isThisInstance()));
                await()
                    .atMost(Duration.ofSeconds(10))
                    .until(() -> details(context).get("holder") instanceof Map<?, ?>);
                context.close(); // releases the lock and ends the watch before the server stops
                assertThat(server.port()).isEqualTo(port);
              }
            });
  }

  @SuppressWarnings("unchecked")
  private Map<String, Object> details(ApplicationContext context) {
    return (Map<String, Object>)
        ((Map<String, Object>) line.healthDetails(context).get("leaders")).get("job");
  }

  private Object standby(ApplicationContext context) {
    return details(context).get("standby");
  }

  /** A leader-only job and a liveness recorder, as an application has them. */
  @Configuration(proxyBeanMethods = false)
  @EnableScheduling
  static class Job {
    final AtomicInteger runs = new AtomicInteger();
    final List<Object> liveness = new CopyOnWriteArrayList<>();

    @Bean
    Work work() {
      return new Work(this);
    }

    @Bean
    ApplicationListener<AvailabilityChangeEvent<?>> livenessRecorder() {
      return e -> liveness.add(e.getState());
    }
  }

  /** Records the watch's events, as an application listening for them would. */
  @Configuration(proxyBeanMethods = false)
  static class Changes {
    final List<LeaderChangedEvent> events = new CopyOnWriteArrayList<>();

    @Bean
    ApplicationListener<LeaderChangedEvent> changesRecorder() {
      return events::add;
    }
  }

  static class Work {
    private final Job job;

    Work(Job job) {
      this.job = job;
    }

    @Scheduled(fixedDelay = 100)
    @LeaderOnly("job")
    public void run() {
      job.runs.incrementAndGet();
    }
  }

  /** An application whose data source points at a port with no server on it yet. */
  private ApplicationContextRunner beforeTheDatabase(int port) {
    List<Class<?>> all = new ArrayList<>(line.autoConfigurations());
    all.add(line.dataSourceAutoConfiguration());
    all.add(RetsuLockAutoConfiguration.class);
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(all.toArray(Class<?>[]::new)))
        .withPropertyValues(
            "spring.datasource.url=jdbc:postgresql://127.0.0.1:" + port + "/postgres",
            "spring.datasource.username=postgres");
  }
}
