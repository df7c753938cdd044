package dev.retsu.lock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ApplicationListener;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;

/**
 * Every voluntary end of a term that is not a stop (a yield, a hand-over to a preferred candidate,
 * a group's yield of one key) releases the lock only once the {@code @LeaderOnly} work has ended,
 * even work that ignores its interrupt, up to {@code close-timeout}, and past the server's idle
 * bound and the client's self-fencing deadline (the session stays proven): two application contexts
 * in one JVM contend on the real PostgreSQL, the leader's step is held until the test lets it go,
 * and no step of the successor starts before the old one has ended.
 */
@ExtendWith(PostgresExtension.class)
public abstract class AbstractVoluntaryEndIntegrationTest {

  private static final AtomicLong KEYS = new AtomicLong(9_500_000);

  /** Shorter than {@code close-timeout} (6 s), longer than the leaders' self-fencing (2 s). */
  private static final Duration HELD = Duration.ofMillis(3500);

  /** The line under test. */
  protected final TestedBootLine line;

  private static TestDatabase db;

  /**
   * Creates the test for one line.
   *
   * @param line the line
   */
  protected AbstractVoluntaryEndIntegrationTest(TestedBootLine line) {
    this.line = line;
  }

  @BeforeAll
  static void database(TestDatabase database) {
    db = database;
  }

  @Test
  void aYieldReleasesTheLockOnlyAfterLeaderOnlyWorkThatIgnoresItsInterruptHasEnded() {
    long key = KEYS.incrementAndGet() + 1000L * line.major();
    Steps steps = new Steps();
    steps.stickOn = "a";
    leader("a", key, steps, false)
        .run(
            a -> {
              RetsuLeader la = leader(a);
              await().atMost(Duration.ofSeconds(10)).until(la::isLeader);
              leader("b", key, steps, false)
                  .run(
                      b -> {
                        RetsuLeader lb = leader(b);
                        await().atMost(Duration.ofSeconds(10)).until(() -> steps.stuck != null);
                        CompletableFuture<Boolean> yielded =
                            CompletableFuture.supplyAsync(() -> la.yield(Duration.ofSeconds(60)));
                        heldThenReleased(steps, lb::isLeader, "b");
                        assertThat(yielded.get(10, TimeUnit.SECONDS)).isTrue();
                        assertThat(a.getBean(Revoked.class).reasons)
                            .containsExactly(LossReason.YIELDED);
                        await().atMost(Duration.ofSeconds(10)).until(lb::isLeader);
                        await().atMost(Duration.ofSeconds(10)).until(() -> steps.ran("b"));
                        assertThat(steps.overlaps()).isEmpty();
                      });
            });
  }

  @Test
  void aHandOverToAPreferredCandidateWaitsForLeaderOnlyWorkThatIgnoresItsInterrupt() {
    long key = KEYS.incrementAndGet() + 1000L * line.major();
    Steps steps = new Steps();
    steps.stickOn = "old";
    leader("old", key, steps, false)
        .run(
            a -> {
              RetsuLeader la = leader(a);
              await().atMost(Duration.ofSeconds(10)).until(la::isLeader);
              await().atMost(Duration.ofSeconds(10)).until(() -> steps.stuck != null);
              leader("new", key, steps, true)
                  .run(
                      b -> {
                        RetsuLeader lb = leader(b);
                        // The old leader finds the preferred one waiting at its next refresh; its
                        // revoked event follows the end of its work.
                        await().atMost(Duration.ofSeconds(10)).until(() -> !la.isLeader());
                        heldThenReleased(steps, lb::isLeader, "new");
                        await()
                            .atMost(Duration.ofSeconds(10))
                            .until(() -> a.getBean(Revoked.class).reasons.size() == 1);
                        assertThat(a.getBean(Revoked.class).reasons)
                            .containsExactly(LossReason.YIELDED);
                        await().atMost(Duration.ofSeconds(10)).until(lb::isLeader);
                        await().atMost(Duration.ofSeconds(10)).until(() -> steps.ran("new"));
                        assertThat(steps.overlaps()).isEmpty();
                      });
            });
  }

  @Test
  void aGroupsYieldOfOneKeyReleasesItOnlyAfterItsLeaderOnlyWorkHasEnded() {
    String group = "retsu-boot-yield-" + KEYS.incrementAndGet() + "-" + line.major();
    Steps steps = new Steps();
    member("g1", group, steps)
        .run(
            a -> {
              RetsuLeaderGroup ga = group(a);
              await().atMost(Duration.ofSeconds(15)).until(() -> ga.holds("0"));
              member("g2", group, steps)
                  .run(
                      b -> {
                        RetsuLeaderGroup gb = group(b);
                        await()
                            .atMost(Duration.ofSeconds(15))
                            .until(() -> ga.group().members() == 2 && gb.group().members() == 2);
                        await()
                            .atMost(Duration.ofSeconds(15))
                            .until(() -> ga.holds("0") != gb.holds("0"));
                        RetsuLeaderGroup holder = ga.holds("0") ? ga : gb;
                        RetsuLeaderGroup other = holder == ga ? gb : ga;
                        String otherId = holder == ga ? "g2" : "g1";
                        steps.stickOn = holder == ga ? "g1" : "g2";
                        await().atMost(Duration.ofSeconds(10)).until(() -> steps.stuck != null);
                        CompletableFuture<Boolean> yielded =
                            CompletableFuture.supplyAsync(
                                () -> holder.yield("0", Duration.ofSeconds(60)));
                        heldThenReleased(steps, () -> other.holds("0"), otherId);
                        yielded.get(10, TimeUnit.SECONDS);
                        await().atMost(Duration.ofSeconds(15)).until(() -> other.holds("0"));
                        await().atMost(Duration.ofSeconds(10)).until(() -> steps.ran(otherId));
                        assertThat(steps.overlaps()).isEmpty();
                      });
            });
  }

  /**
   * While the old leader's step is held (within {@code close-timeout}), the successor neither holds
   * the lock nor runs a step; then the step is let go.
   */
  private static void heldThenReleased(
      Steps steps, java.util.concurrent.Callable<Boolean> successorLeads, String successor) {
    try {
      await(successor + " neither leads nor works while the old leader's step is held")
          .pollDelay(Duration.ZERO)
          .during(HELD)
          .atMost(HELD.plusSeconds(5))
          .until(() -> !successorLeads.call() && !steps.ran(successor));
    } finally {
      steps.release = true;
    }
  }

  /** Each context has its own pool, closed with it, as each instance of a service would. */
  private static HikariDataSource pool(String id) {
    HikariConfig c = new HikariConfig();
    c.setPoolName("retsu-lock-boot-yield-" + id);
    c.setJdbcUrl(db.jdbcUrl());
    c.setUsername(db.user());
    c.setPassword(db.password());
    c.setMaximumPoolSize(4);
    return new HikariDataSource(c);
  }

  private ApplicationContextRunner runner(String id, Steps steps, Class<?> work) {
    List<Class<?>> all = new ArrayList<>(line.autoConfigurations());
    all.add(RetsuLockAutoConfiguration.class);
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(all.toArray(Class<?>[]::new)))
        .withBean(DataSource.class, () -> pool(id))
        .withBean(Steps.class, () -> steps)
        .withUserConfiguration(work)
        .withPropertyValues("retsu.lock.candidate-id=" + id);
  }

  private ApplicationContextRunner leader(String id, long key, Steps steps, boolean preferred) {
    return runner(id, steps, LeaderWork.class)
        .withPropertyValues(
            "retsu.lock.leaders.job.key.value=" + key,
            "retsu.lock.leaders.job.takeover=wait",
            "retsu.lock.leaders.job.preferred=" + preferred,
            "retsu.lock.leaders.job.retry-interval=100ms",
            "retsu.lock.leaders.job.refresh-interval=100ms",
            "retsu.lock.leaders.job.heartbeat-interval=500ms",
            "retsu.lock.leaders.job.self-fence-after=2s",
            "retsu.lock.leaders.job.close-timeout=6s");
  }

  private ApplicationContextRunner member(String id, String group, Steps steps) {
    return runner(id, steps, GroupWork.class)
        .withPropertyValues(
            "retsu.lock.groups.parts.namespace=" + group,
            "retsu.lock.groups.parts.partitions=1",
            "retsu.lock.groups.parts.sessions=1",
            "retsu.lock.groups.parts.refresh-interval=100ms",
            "retsu.lock.groups.parts.membership-interval=200ms",
            "retsu.lock.groups.parts.heartbeat-interval=500ms",
            "retsu.lock.groups.parts.self-fence-after=2s",
            "retsu.lock.groups.parts.refresh-timeout=1s",
            "retsu.lock.groups.parts.close-timeout=6s");
  }

  private static RetsuLeader leader(AssertableApplicationContext context) {
    assertThat(context).hasNotFailed();
    return context.getBean("retsuLeader.job", RetsuLeader.class);
  }

  private static RetsuLeaderGroup group(AssertableApplicationContext context) {
    assertThat(context).hasNotFailed();
    return context.getBean("retsuLeaderGroup.parts", RetsuLeaderGroup.class);
  }

  /**
   * Start and end of every step, on one clock, across both contexts; the step of the instance
   * {@code stickOn} is held, ignoring interrupts, until {@code release}.
   */
  static final class Steps {
    final List<Object[]> intervals = new CopyOnWriteArrayList<>();
    volatile String stickOn;
    volatile Thread stuck;
    volatile boolean release;

    /** Steps count for {@link #ran} from here on: set when a step gets stuck. */
    volatile long since = Long.MIN_VALUE;

    void run(String id) {
      long start = System.nanoTime();
      try {
        if (id.equals(stickOn) && !release) {
          since = start;
          stuck = Thread.currentThread();
          while (!release) {
            Thread.interrupted(); // a blocking call without a timeout, that ignores interrupts
            LockSupport.parkNanos(1_000_000L);
          }
        }
      } finally {
        intervals.add(new Object[] {id, start, System.nanoTime()});
      }
    }

    /** Whether a step of {@code id} started since the held one. */
    boolean ran(String id) {
      long from = since;
      return intervals.stream().anyMatch(x -> x[0].equals(id) && (long) x[1] - from >= 0);
    }

    List<String> overlaps() {
      List<String> out = new ArrayList<>();
      for (Object[] x : intervals) {
        for (Object[] y : intervals) {
          if (!x[0].equals(y[0]) && (long) x[1] < (long) y[2] && (long) y[1] < (long) x[2]) {
            out.add(x[0] + " " + x[1] + "-" + x[2] + " overlaps " + y[0] + " " + y[1] + "-" + y[2]);
          }
        }
      }
      return out;
    }
  }

  /** Every revoked event's reason. */
  static final class Revoked implements ApplicationListener<LeadershipRevokedEvent> {
    final List<LossReason> reasons = new CopyOnWriteArrayList<>();

    @Override
    public void onApplicationEvent(LeadershipRevokedEvent event) {
      reasons.add(event.getReason());
    }
  }

  @Configuration(proxyBeanMethods = false)
  @EnableScheduling
  static class LeaderWork {
    @Bean
    Revoked revoked() {
      return new Revoked();
    }

    @Bean
    JobStep jobStep(Steps steps, Environment env) {
      return new JobStep(steps, env.getProperty("retsu.lock.candidate-id"));
    }
  }

  static class JobStep {
    private final Steps steps;
    private final String id;

    JobStep(Steps steps, String id) {
      this.steps = steps;
      this.id = id;
    }

    @Scheduled(fixedDelay = 20)
    @LeaderOnly("job")
    public void step() {
      steps.run(id);
    }
  }

  @Configuration(proxyBeanMethods = false)
  @EnableScheduling
  static class GroupWork {
    @Bean
    PartStep partStep(Steps steps, Environment env) {
      return new PartStep(steps, env.getProperty("retsu.lock.candidate-id"));
    }
  }

  static class PartStep {
    private final Steps steps;
    private final String id;

    PartStep(Steps steps, String id) {
      this.steps = steps;
      this.id = id;
    }

    @Scheduled(fixedDelay = 20)
    @LeaderOnly(value = "parts", key = "0")
    public void step() {
      steps.run(id);
    }
  }
}
