package dev.retsu.lock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.LeaderTask;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.availability.LivenessState;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ApplicationListener;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;

/**
 * Two application contexts in one JVM contend on the real PostgreSQL: one leads, its task and its
 * {@code @LeaderOnly} method run on the lease's own session, both are UP, a graceful stop hands
 * over with no overlapping {@code @LeaderOnly} work, and a terminated session ends the term.
 */
@ExtendWith(PostgresExtension.class)
public abstract class AbstractRetsuLockAutoConfigurationIntegrationTest {

  /** The line under test. */
  protected final TestedBootLine line;

  /**
   * Creates the test for one line.
   *
   * @param line the line
   */
  protected AbstractRetsuLockAutoConfigurationIntegrationTest(TestedBootLine line) {
    this.line = line;
  }

  private static final AtomicLong KEYS = new AtomicLong(9_100_000);

  private static TestDatabase db;

  @BeforeAll
  static void database(TestDatabase database) {
    db = database;
  }

  /** Each context has its own pool, closed with it, as each instance of a service would. */
  private static HikariDataSource pool(String id) {
    HikariConfig c = new HikariConfig();
    c.setPoolName("retsu-lock-boot-test-" + id);
    c.setJdbcUrl(db.jdbcUrl());
    c.setUsername(db.user());
    c.setPassword(db.password());
    c.setMaximumPoolSize(4);
    return new HikariDataSource(c);
  }

  private ApplicationContextRunner candidate(String id, long key, Stamps stamps) {
    java.util.List<Class<?>> all = new java.util.ArrayList<>(line.autoConfigurations());
    all.addAll(
        List.of(
            RetsuLockAutoConfiguration.class,
            RetsuLockEndpointAutoConfiguration.class,
            RetsuLockMetricsAutoConfiguration.class));
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(all.toArray(Class<?>[]::new)))
        .withBean(DataSource.class, () -> pool(id))
        .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
        .withBean(Stamps.class, () -> stamps)
        .withUserConfiguration(Work.class)
        .withPropertyValues(
            "management.endpoints.web.exposure.include=leaders",
            "retsu.lock.candidate-id=" + id,
            "retsu.lock.leaders.job.key.value=" + key,
            "retsu.lock.leaders.job.retry-interval=200ms",
            "retsu.lock.leaders.job.refresh-interval=200ms");
  }

  @Test
  void aGroupThatFailsAfterItStartedIsDownAndPublishesLivenessBroken() throws Exception {
    // Every session of the group gets the same backend, as through a transaction pooler; the
    // second session cannot connect until the test has seen the group start on the first, so the
    // group fails only afterwards, when the second's retry finds the first's marker on the backend.
    java.util.concurrent.CountDownLatch late = new java.util.concurrent.CountDownLatch(1);
    try (Connection backend = db.connect()) {
      List<Class<?>> all = new java.util.ArrayList<>(line.autoConfigurations());
      all.add(RetsuLockAutoConfiguration.class);
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(all.toArray(Class<?>[]::new)))
          .withBean(DataSource.class, () -> new OneBackend(backend, late))
          .withBean(
              AbstractRetsuLockAutoConfigurationTest.Liveness.class,
              AbstractRetsuLockAutoConfigurationTest.Liveness::new)
          .withPropertyValues(
              "retsu.lock.candidate-id=pooled",
              "retsu.lock.groups.g.namespace=late-failure-" + KEYS.incrementAndGet(),
              "retsu.lock.groups.g.keys=a,b,c,d",
              "retsu.lock.groups.g.sessions=2")
          .run(
              context -> {
                assertThat(context).hasNotFailed();
                RetsuLeaderGroup group = context.getBean(RetsuLeaderGroup.class);
                List<Object> liveness =
                    context.getBean(AbstractRetsuLockAutoConfigurationTest.Liveness.class).states;
                assertThat(group.status()).as("started on its first session").isEqualTo("member");
                assertThat(liveness).doesNotContain(LivenessState.BROKEN);
                late.countDown();
                await()
                    .atMost(Duration.ofSeconds(15))
                    .until(() -> liveness.contains(LivenessState.BROKEN));
                assertThat(group.status()).isEqualTo("failed");
                assertThat(line.healthStatus(context)).isEqualTo("DOWN");
                assertThat(line.healthDetails(context).get("groups").toString())
                    .contains("role=failed", "POOLER_DETECTED");
              });
    }
  }

  /**
   * Hands every borrower the same backend, the way a transaction-mode pooler with one server
   * connection does; every borrow after the first fails as an unreachable server would until {@code
   * late} is released, then gets the same backend. {@code close()} of a handle keeps the backend
   * open.
   */
  private static final class OneBackend implements DataSource {
    private final Connection backend;
    private final java.util.concurrent.CountDownLatch late;
    private final java.util.concurrent.atomic.AtomicInteger borrows =
        new java.util.concurrent.atomic.AtomicInteger();

    OneBackend(Connection backend, java.util.concurrent.CountDownLatch late) {
      this.backend = backend;
      this.late = late;
    }

    @Override
    public Connection getConnection() throws java.sql.SQLException {
      // not reachable for the later sessions until the test saw the group start on the first
      if (borrows.incrementAndGet() > 1 && late.getCount() > 0) {
        throw new java.sql.SQLException("not reachable yet (the test's late borrower)", "08001");
      }
      return (Connection)
          java.lang.reflect.Proxy.newProxyInstance(
              getClass().getClassLoader(),
              new Class<?>[] {Connection.class},
              (proxy, method, args) -> {
                switch (method.getName()) {
                  case "close":
                  case "abort":
                    return null;
                  case "isWrapperFor":
                    return false;
                  case "unwrap":
                    throw new java.sql.SQLException("not a wrapper");
                  case "equals":
                    return proxy == args[0];
                  case "hashCode":
                    return System.identityHashCode(proxy);
                  default:
                    try {
                      return method.invoke(backend, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                      throw e.getCause();
                    }
                }
              });
    }

    @Override
    public Connection getConnection(String user, String password) throws java.sql.SQLException {
      return getConnection();
    }

    @Override
    public java.io.PrintWriter getLogWriter() {
      return null;
    }

    @Override
    public void setLogWriter(java.io.PrintWriter out) {}

    @Override
    public void setLoginTimeout(int seconds) {}

    @Override
    public int getLoginTimeout() {
      return 0;
    }

    @Override
    public java.util.logging.Logger getParentLogger()
        throws java.sql.SQLFeatureNotSupportedException {
      throw new java.sql.SQLFeatureNotSupportedException();
    }

    @Override
    public <T> T unwrap(Class<T> iface) throws java.sql.SQLException {
      throw new java.sql.SQLException("not a wrapper");
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) {
      return false;
    }
  }

  @Test
  void oneLeadsOnItsOwnSessionBothAreUpAndAGracefulStopHandsOverWithoutOverlap() {
    long key = KEYS.incrementAndGet();
    Stamps stamps = new Stamps();
    candidate("a", key, stamps)
        .run(
            a -> {
              RetsuLeader la = leader(a);
              await().atMost(Duration.ofSeconds(10)).until(la::isLeader);
              candidate("b", key, stamps)
                  .run(
                      b -> {
                        RetsuLeader lb = leader(b);
                        Term term = la.currentTerm().orElseThrow();
                        Work wa = a.getBean(Work.class);
                        await()
                            .atMost(Duration.ofSeconds(10))
                            .until(() -> wa.scheduledPids.size() >= 2 && wa.taskPids.size() >= 2);
                        // All leader work ran on the session that holds the lock.
                        assertThat(wa.taskPids).containsOnly(term.backendPid());
                        assertThat(wa.scheduledPids).containsOnly(term.backendPid());
                        assertThat(lb.isLeader()).isFalse();
                        assertThat(b.getBean(Work.class).scheduledPids).isEmpty();
                        assertThat(b.getBean(Work.class).taskPids).isEmpty();
                        // Both UP; the standby's endpoint names the leader's session as holder.
                        assertThat(line.healthStatus(a)).isEqualTo("UP");
                        assertThat(line.healthStatus(b)).isEqualTo("UP");
                        assertThat(details(a))
                            .containsEntry("role", "leader")
                            .containsEntry("term", 1L)
                            .containsEntry("fencingToken", term.fencingToken().toString())
                            .containsKey("lastRefreshAge");
                        assertThat(details(b))
                            .containsEntry("role", "standby")
                            .doesNotContainKey("term");
                        // Its first attempt may still be on its way ("starting"), then it says why.
                        await()
                            .atMost(Duration.ofSeconds(10))
                            .until(
                                () ->
                                    String.valueOf(details(b).get("standby"))
                                        .contains("reason=held-elsewhere"));
                        Map<String, Object> seen = b.getBean(LeadersEndpoint.class).leader("job");
                        assertThat(seen.get("holder").toString())
                            .contains("pid=" + term.backendPid(), "candidate=a", "self=false");
                        MeterRegistry ra = a.getBean(MeterRegistry.class);
                        assertThat(
                                ra.get("retsu.lock.leader")
                                    .tags("lock", "job", "state", "leader")
                                    .gauge()
                                    .value())
                            .isEqualTo(1.0);
                        // Graceful stop of the leader: its @LeaderOnly work ends before its lock
                        // is released, so b's work starts after a's last work ended.
                        a.close();
                        assertThat(wa.revokedReasons).containsExactly(LossReason.CLOSED);
                        await().atMost(Duration.ofSeconds(10)).until(lb::isLeader);
                        Work wb = b.getBean(Work.class);
                        await()
                            .atMost(Duration.ofSeconds(10))
                            .until(() -> wb.scheduledPids.size() >= 1);
                        assertThat(stamps.overlaps()).isEmpty();
                        Term bTerm = lb.currentTerm().orElseThrow();
                        assertThat(bTerm.fencingToken().isNewerThan(term.fencingToken())).isTrue();
                      });
            });
  }

  @Test
  void aTerminatedSessionEndsTheTermAndTheLeaderContendsAgain() throws Exception {
    long key = KEYS.incrementAndGet();
    candidate("solo", key, new Stamps())
        .run(
            c -> {
              RetsuLeader l = leader(c);
              await().atMost(Duration.ofSeconds(10)).until(l::isLeader);
              Term first = l.currentTerm().orElseThrow();
              assertThat(db.terminateBackend(first.backendPid())).isTrue();
              Work w = c.getBean(Work.class);
              await()
                  .atMost(Duration.ofSeconds(10))
                  .until(() -> w.revokedReasons.contains(LossReason.SESSION_LOST));
              await()
                  .atMost(Duration.ofSeconds(10))
                  .until(() -> l.currentTerm().map(t -> t.number() == 2).orElse(false));
              assertThat(
                      l.currentTerm()
                          .orElseThrow()
                          .fencingToken()
                          .isNewerThan(first.fencingToken()))
                  .isTrue();
              assertThat(line.healthStatus(c)).isEqualTo("UP");
            });
  }

  private ApplicationContextRunner member(String id, String group) {
    java.util.List<Class<?>> all = new java.util.ArrayList<>(line.autoConfigurations());
    all.addAll(List.of(RetsuLockAutoConfiguration.class, RetsuLockMetricsAutoConfiguration.class));
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(all.toArray(Class<?>[]::new)))
        .withBean(DataSource.class, () -> pool(id))
        .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
        .withUserConfiguration(GroupWork.class)
        .withPropertyValues(
            "retsu.lock.candidate-id=" + id,
            "retsu.lock.groups.parts.namespace=" + group,
            "retsu.lock.groups.parts.partitions=4",
            "retsu.lock.groups.parts.sessions=2",
            "retsu.lock.groups.parts.refresh-interval=100ms",
            "retsu.lock.groups.parts.membership-interval=200ms");
  }

  @Test
  void aGroupSpreadsItsKeysAndRunsPerKeyWorkOnTheSessionThatHoldsTheKey() {
    String group = "retsu-boot-group-" + KEYS.incrementAndGet();
    member("g1", group)
        .run(
            a -> {
              assertThat(a).hasNotFailed();
              RetsuLeaderGroup ga = a.getBean("retsuLeaderGroup.parts", RetsuLeaderGroup.class);
              await().atMost(Duration.ofSeconds(15)).until(() -> ga.heldKeys().size() == 4);
              member("g2", group)
                  .run(
                      b -> {
                        RetsuLeaderGroup gb =
                            b.getBean("retsuLeaderGroup.parts", RetsuLeaderGroup.class);
                        // Fair spread: two keys each, disjoint.
                        await()
                            .atMost(Duration.ofSeconds(20))
                            .until(() -> ga.heldKeys().size() == 2 && gb.heldKeys().size() == 2);
                        assertThat(ga.heldKeys()).doesNotContainAnyElementsOf(gb.heldKeys());
                        // Per-key work ran on the session that holds that key, through the view.
                        GroupWork wb = b.getBean(GroupWork.class);
                        await().atMost(Duration.ofSeconds(10)).until(() -> wb.pids.size() >= 4);
                        for (int[] p : wb.pids) {
                          assertThat(p[0]).as("view pid = session pid").isEqualTo(p[1]);
                        }
                        // @LeaderOnly(key = "0") runs on the holder of partition 0 only.
                        RetsuLeaderGroup holder = ga.holds("0") ? ga : gb;
                        GroupWork wHolder =
                            holder == ga ? a.getBean(GroupWork.class) : b.getBean(GroupWork.class);
                        GroupWork wOther = holder == ga ? wb : a.getBean(GroupWork.class);
                        int before = wOther.partitionZero.get();
                        await()
                            .atMost(Duration.ofSeconds(10))
                            .until(() -> wHolder.partitionZero.get() >= 2);
                        assertThat(wOther.partitionZero.get()).isEqualTo(before);
                        // Health and metrics per group.
                        assertThat(line.healthStatus(b)).isEqualTo("UP");
                        assertThat(line.healthDetails(b).get("groups").toString())
                            .contains("keysHeld=2", "role=member");
                        assertThat(
                                b.getBean(MeterRegistry.class)
                                    .get("retsu.lock.group.keys.held")
                                    .tags("group", "parts")
                                    .gauge()
                                    .value())
                            .isEqualTo(2.0);
                      });
              // b left: a takes every key back.
              await().atMost(Duration.ofSeconds(20)).until(() -> ga.heldKeys().size() == 4);
            });
  }

  /** A group's task and a per-key @LeaderOnly job. */
  @Configuration(proxyBeanMethods = false)
  @EnableScheduling
  static class GroupWork {
    final List<int[]> pids = new CopyOnWriteArrayList<>();
    final java.util.concurrent.atomic.AtomicInteger partitionZero =
        new java.util.concurrent.atomic.AtomicInteger();

    @Bean("parts")
    LeaderTask parts(RetsuLeaders leaders) {
      return ctx -> {
        Integer viaView =
            leaders
                .group("parts")
                .jdbcTemplate()
                .queryForObject("SELECT pg_backend_pid()", Integer.class);
        pids.add(new int[] {viaView, ctx.term().backendPid()});
      };
    }

    @Bean
    PartitionZero partitionZero() {
      return new PartitionZero(this);
    }
  }

  static class PartitionZero {
    private final GroupWork work;

    PartitionZero(GroupWork work) {
      this.work = work;
    }

    @Scheduled(fixedDelay = 50)
    @LeaderOnly(value = "parts", key = "0")
    public void run() {
      work.partitionZero.incrementAndGet();
    }
  }

  private static RetsuLeader leader(AssertableApplicationContext context) {
    assertThat(context).hasNotFailed();
    return context.getBean("retsuLeader.job", RetsuLeader.class);
  }

  @SuppressWarnings("unchecked")
  private Map<String, Object> details(AssertableApplicationContext context) {
    return (Map<String, Object>)
        ((Map<String, Object>) line.healthDetails(context).get("leaders")).get("job");
  }

  /** Start and end of every piece of @LeaderOnly work, on one clock, across both contexts. */
  static final class Stamps {
    final List<long[]> intervals = new CopyOnWriteArrayList<>();

    List<String> overlaps() {
      List<String> out = new CopyOnWriteArrayList<>();
      for (long[] x : intervals) {
        for (long[] y : intervals) {
          if (x != y && x[2] != y[2] && x[0] < y[1] && y[0] < x[1]) {
            out.add(x[2] + ":" + x[0] + "-" + x[1] + " overlaps " + y[2] + ":" + y[0] + "-" + y[1]);
          }
        }
      }
      return out;
    }
  }

  @Configuration(proxyBeanMethods = false)
  @EnableScheduling
  static class Work {
    final List<Integer> taskPids = new CopyOnWriteArrayList<>();
    final List<Integer> scheduledPids = new CopyOnWriteArrayList<>();
    final List<LossReason> revokedReasons = new CopyOnWriteArrayList<>();

    @Bean("job")
    LeaderTask job(RetsuLeaders leaders) {
      return ctx ->
          taskPids.add(
              leaders
                  .get("job")
                  .jdbcTemplate()
                  .queryForObject("SELECT pg_backend_pid()", Integer.class));
    }

    @Bean
    Scheduler scheduler(RetsuLeaders leaders, Stamps stamps) {
      return new Scheduler(this, leaders, stamps);
    }

    @Bean
    ApplicationListener<LeadershipRevokedEvent> revoked() {
      return e -> revokedReasons.add(e.getReason());
    }
  }

  static class Scheduler {
    private final Work work;
    private final RetsuLeaders leaders;
    private final Stamps stamps;

    Scheduler(Work work, RetsuLeaders leaders, Stamps stamps) {
      this.work = work;
      this.leaders = leaders;
      this.stamps = stamps;
    }

    @Scheduled(fixedDelay = 30)
    @LeaderOnly("job")
    public void collect() {
      long start = System.nanoTime();
      try {
        work.scheduledPids.add(
            leaders
                .get("job")
                .jdbcTemplate()
                .queryForObject("SELECT pg_backend_pid() FROM pg_sleep(0.05)", Integer.class));
      } finally {
        stamps.intervals.add(new long[] {start, System.nanoTime(), System.identityHashCode(work)});
      }
    }
  }
}
