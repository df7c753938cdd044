package dev.retsu.lock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.Term;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import dev.retsu.lock.testing.VirtualThreadPins;
import dev.retsu.lock.testing.VirtualThreadPins.Pin;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;

/**
 * A Spring Boot application with {@code spring.threads.virtual.enabled=true}: its
 * {@code @Scheduled @LeaderOnly} jobs (a leader's and a group key's) run on virtual threads, query
 * through the application's pool, and live through a session killed under the leader, all under a
 * JFR recording of every {@value VirtualThreadPins#PINNED_EVENT} (threshold 0). A pin whose first
 * frame outside the JDK is the library's fails the test. Needs Java 21 or later: skipped on 17, run
 * by {@code -Pvirtual-threads} on Java 25.
 */
@ExtendWith(PostgresExtension.class)
public abstract class AbstractVirtualThreadPinningIntegrationTest {

  private static final AtomicLong KEYS = new AtomicLong(9_700_000);
  private static final Duration WITHIN = Duration.ofSeconds(30);

  private static TestDatabase db;

  /** The line under test. */
  protected final TestedBootLine line;

  private final Class<?> taskScheduling;

  /**
   * Creates the test for one line.
   *
   * @param line the line
   * @param taskScheduling the line's {@code TaskSchedulingAutoConfiguration}, which makes the
   *     scheduler run jobs on virtual threads when the property asks for them
   */
  protected AbstractVirtualThreadPinningIntegrationTest(
      TestedBootLine line, Class<?> taskScheduling) {
    this.line = line;
    this.taskScheduling = taskScheduling;
  }

  @BeforeAll
  static void database(TestDatabase database) {
    VirtualThreadPins.assumeAvailable();
    db = database;
  }

  @Test
  void leaderOnlyScheduledJobsOnVirtualThreadsNeverPinACarrierInLibraryCode() throws Exception {
    long key = KEYS.incrementAndGet() + 1000L * line.major();
    String group = "retsu-boot-vt-" + key;
    Runs runs = new Runs();

    List<Pin> pins =
        VirtualThreadPins.during(
            () ->
                runner(key, group, runs)
                    .run(
                        context -> {
                          assertThat(context).hasNotFailed();
                          RetsuLeader leader =
                              context.getBean("retsuLeader.job", RetsuLeader.class);
                          await().atMost(WITHIN).until(leader::isLeader);
                          await().atMost(WITHIN).until(() -> runs.job.get() >= 5);
                          await().atMost(WITHIN).until(() -> runs.part.get() >= 5);

                          // The leader's session is killed under its running jobs: the term ends,
                          // the jobs are interrupted and awaited, and the loop leads again.
                          Term first = leader.currentTerm().orElseThrow();
                          assertThat(db.terminateBackend(first.backendPid())).isTrue();
                          await()
                              .atMost(WITHIN)
                              .until(
                                  () ->
                                      leader.currentTerm().map(Term::number).orElse(0L)
                                          > first.number());
                          int before = runs.job.get();
                          await().atMost(WITHIN).until(() -> runs.job.get() >= before + 5);
                        }));

    assertThat(runs.virtual.get()).as("job runs on virtual threads").isPositive();
    assertThat(runs.platform.get()).as("job runs on platform threads").isZero();
    pins.forEach(p -> System.out.println("[virtual-threads] " + p));
    assertThat(pins)
        .as("pins whose first frame outside the JDK is the library's")
        .filteredOn(
            p -> p.causedBy("dev.retsu.lock", AbstractVirtualThreadPinningIntegrationTest.class))
        .isEmpty();
  }

  private ApplicationContextRunner runner(long key, String group, Runs runs) {
    List<Class<?>> all = new ArrayList<>(line.autoConfigurations());
    all.add(RetsuLockAutoConfiguration.class);
    all.add(taskScheduling);
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(all.toArray(Class<?>[]::new)))
        .withBean(DataSource.class, AbstractVirtualThreadPinningIntegrationTest::pool)
        .withBean(Runs.class, () -> runs)
        .withUserConfiguration(Jobs.class)
        .withPropertyValues(
            "spring.threads.virtual.enabled=true",
            "retsu.lock.candidate-id=vt",
            "retsu.lock.leaders.job.key.value=" + key,
            "retsu.lock.leaders.job.retry-interval=100ms",
            "retsu.lock.leaders.job.refresh-interval=100ms",
            "retsu.lock.leaders.job.heartbeat-interval=500ms",
            "retsu.lock.leaders.job.self-fence-after=2s",
            "retsu.lock.groups.parts.namespace=" + group,
            "retsu.lock.groups.parts.partitions=1",
            "retsu.lock.groups.parts.sessions=1",
            "retsu.lock.groups.parts.refresh-interval=100ms",
            "retsu.lock.groups.parts.membership-interval=200ms");
  }

  /** The application's own pool, as a service with virtual threads would have it. */
  private static HikariDataSource pool() {
    HikariConfig c = new HikariConfig();
    c.setPoolName("retsu-lock-boot-vt");
    c.setJdbcUrl(db.jdbcUrl());
    c.setUsername(db.user());
    c.setPassword(db.password());
    c.setMaximumPoolSize(6);
    return new HikariDataSource(c);
  }

  /** Counts of the jobs' runs, and on which kind of thread they ran. */
  static final class Runs {
    final AtomicInteger job = new AtomicInteger();
    final AtomicInteger part = new AtomicInteger();
    final AtomicInteger virtual = new AtomicInteger();
    final AtomicInteger platform = new AtomicInteger();

    void ran(AtomicInteger which, DataSource dataSource) {
      (VirtualThreadPins.isVirtual(Thread.currentThread()) ? virtual : platform).incrementAndGet();
      try (Connection c = dataSource.getConnection();
          Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT pg_sleep(0.002)")) {
        rs.next();
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
      which.incrementAndGet();
    }
  }

  @Configuration(proxyBeanMethods = false)
  @EnableScheduling
  static class Jobs {
    @Bean
    JobBeans jobBeans(Runs runs, DataSource dataSource) {
      return new JobBeans(runs, dataSource);
    }
  }

  static class JobBeans {
    private final Runs runs;
    private final DataSource dataSource;

    JobBeans(Runs runs, DataSource dataSource) {
      this.runs = runs;
      this.dataSource = dataSource;
    }

    @Scheduled(fixedDelay = 20)
    @LeaderOnly("job")
    public void job() {
      runs.ran(runs.job, dataSource);
    }

    @Scheduled(fixedDelay = 20)
    @LeaderOnly(value = "parts", key = "0")
    public void part() {
      runs.ran(runs.part, dataSource);
    }
  }
}
