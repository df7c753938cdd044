package dev.retsu.lock.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.retsu.lock.FailoverTiming;
import dev.retsu.lock.FailurePolicy;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LeadershipLostException;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.ServerPath;
import dev.retsu.lock.Term;
import dev.retsu.lock.testing.FaultProxy;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * {@link LeaderMetrics} bound to real leader loops on a real PostgreSQL: what the leader gauge
 * shows in each loop state, a bind during a term, and that {@code close()} unsubscribes.
 */
@ExtendWith(PostgresExtension.class)
class LeaderMetricsLoopIntegrationTest {

  private static final Duration WITHIN = Duration.ofSeconds(30);
  private static final AtomicInteger KEYS = new AtomicInteger(8000);

  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final List<AutoCloseable> closeables = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (int i = closeables.size() - 1; i >= 0; i--) {
      closeables.get(i).close();
    }
  }

  private LeaderLoop loop(TestDatabase db, LockKey key, String id, FailurePolicy policy) {
    LeaderLoop loop =
        LeaderLoop.builder(db.dataSource(), key)
            .candidateId(id)
            .retryInterval(Duration.ofMillis(100))
            .refreshInterval(Duration.ofMillis(200))
            .timing(FailoverTiming.DEFAULT.withHeartbeatInterval(Duration.ofMillis(100)))
            .failurePolicy(policy)
            .build();
    closeables.add(loop);
    return loop;
  }

  private LeaderMetrics bound(LeaderLoop loop) {
    LeaderMetrics m = LeaderMetrics.builder(loop).lockName("queue-state").build();
    m.bindTo(registry);
    closeables.add(m);
    return m;
  }

  private double state(String candidate, String state) {
    return registry
        .get(Names.LEADER)
        .tags("lock", "queue-state", "candidate", candidate, "state", state)
        .gauge()
        .value();
  }

  private double count(String name, String... tags) {
    return registry.get(name).tags(tags).counter().count();
  }

  private static LockKey newKey() {
    return LockKey.of(KEYS.incrementAndGet());
  }

  @Test
  void bindingWhileTheLoopLeadsShowsTheLeaderAtOnce(TestDatabase db) throws Exception {
    LeaderLoop loop = loop(db, newKey(), "a", FailurePolicy.STEP_DOWN);
    CompletableFuture<Void> run = loop.start(ctx -> {});
    await().atMost(WITHIN).until(loop::isLeader);

    LeaderMetrics m = bound(loop);

    // No event has reached the metrics yet: the bind caught up with the running term.
    assertThat(m.isLeader()).isTrue();
    assertThat(state("a", "leader")).isEqualTo(1.0);
    assertThat(state("a", "standby")).isEqualTo(0.0);
    assertThat(registry.get(Names.TERM).longTaskTimer().activeTasks()).isEqualTo(1);
    assertThat(count(Names.ACQUISITIONS)).as("acquired before the bind").isZero();
    // The term's refreshes and its end are heard from then on.
    await().atMost(WITHIN).until(() -> refreshes("success") >= 2);

    loop.close();
    run.get(WITHIN.toSeconds(), TimeUnit.SECONDS);

    assertThat(loop.state()).isEqualTo(LeaderLoop.State.CLOSED);
    assertThat(m.isLeader()).isFalse();
    assertThat(state("a", "leader")).isEqualTo(0.0);
    assertThat(state("a", "standby")).as("a closed loop does not contend").isEqualTo(0.0);
    assertThat(registry.get(Names.TERM).longTaskTimer().activeTasks()).isZero();
    assertThat(count(Names.LOST_TERMS, "reason", "closed")).isEqualTo(1.0);
  }

  /**
   * The proxied gauge: NaN before the first term, 1 once a term's session went through a TCP proxy
   * (and still 1 after that term ended), 0 for a loop that connects directly.
   */
  @Test
  void sessionProxiedGaugeIsOneThroughAProxyAndZeroDirect(TestDatabase db) throws Exception {
    try (FaultProxy proxy = FaultProxy.inFrontOf(db.jdbcUrl())) {
      PGSimpleDataSource through = new PGSimpleDataSource();
      through.setUrl(proxy.rewrite(db.jdbcUrl()));
      through.setUser(db.user());
      through.setPassword(db.password());
      LeaderLoop proxied = LeaderLoop.builder(through, newKey()).candidateId("proxied").build();
      closeables.add(proxied);
      LeaderLoop direct = loop(db, newKey(), "direct", FailurePolicy.STEP_DOWN);
      bound(direct);
      LeaderMetrics m = LeaderMetrics.builder(proxied).lockName("behind-proxy").build();
      m.bindTo(registry);
      closeables.add(m);
      Gauge gauge = registry.get(Names.SESSION_PROXIED).tags("candidate", "proxied").gauge();
      assertThat(gauge.value()).as("before the first term").isNaN();

      proxied.start(ctx -> {});
      direct.start(ctx -> {});
      await().atMost(WITHIN).until(() -> proxied.isLeader() && direct.isLeader());

      assertThat(proxied.currentTerm().orElseThrow().serverPath()).isEqualTo(ServerPath.PROXIED);
      assertThat(gauge.value()).isEqualTo(1.0);
      assertThat(registry.get(Names.SESSION_PROXIED).tags("candidate", "direct").gauge().value())
          .isEqualTo(0.0);
      proxied.close();
      assertThat(gauge.value()).as("the last term's path, after it ended").isEqualTo(1.0);
    }
  }

  @Test
  void standbyIsOneOnlyWhileTheLoopRunsWithoutLeading(TestDatabase db) throws Exception {
    LockKey key = newKey();
    LeaderLoop holder = loop(db, key, "a", FailurePolicy.STEP_DOWN);
    holder.start(ctx -> {});
    await().atMost(WITHIN).until(holder::isLeader);
    LeaderLoop loop = loop(db, key, "b", FailurePolicy.STEP_DOWN);
    bound(loop);

    assertThat(loop.state()).isEqualTo(LeaderLoop.State.NEW);
    assertThat(state("b", "standby")).as("NEW").isEqualTo(0.0);
    assertThat(state("b", "leader")).as("NEW").isEqualTo(0.0);

    CompletableFuture<Void> run = loop.start(ctx -> {});
    await().atMost(WITHIN).until(() -> count(Names.ATTEMPTS, "result", "held_elsewhere") >= 2);
    assertThat(state("b", "standby")).as("RUNNING, not leading").isEqualTo(1.0);
    assertThat(state("b", "leader")).as("RUNNING, not leading").isEqualTo(0.0);

    loop.close();
    run.get(WITHIN.toSeconds(), TimeUnit.SECONDS);
    assertThat(loop.state()).isEqualTo(LeaderLoop.State.CLOSED);
    assertThat(state("b", "standby")).as("CLOSED").isEqualTo(0.0);
    assertThat(state("b", "leader")).as("CLOSED").isEqualTo(0.0);
  }

  @Test
  void aLoopThatFailedShowsZeroInBothStates(TestDatabase db) throws Exception {
    LeaderLoop loop = loop(db, newKey(), "a", FailurePolicy.EXIT);
    LeaderMetrics m = bound(loop);
    CompletableFuture<Void> run = loop.start(ctx -> {});
    await().atMost(WITHIN).until(() -> state("a", "leader") == 1.0);
    assertThat(state("a", "standby")).isEqualTo(0.0);

    assertThat(db.terminateBackend(loop.currentTerm().orElseThrow().backendPid())).isTrue();

    ExecutionException exit =
        assertThrows(ExecutionException.class, () -> run.get(WITHIN.toSeconds(), TimeUnit.SECONDS));
    assertThat(exit.getCause()).isInstanceOf(LeadershipLostException.class);
    String reason =
        ((LeadershipLostException) exit.getCause()).reason().name().toLowerCase(Locale.ROOT);
    assertThat(loop.state()).isEqualTo(LeaderLoop.State.FAILED);
    assertThat(m.isLeader()).isFalse();
    assertThat(state("a", "leader")).as("FAILED").isEqualTo(0.0);
    assertThat(state("a", "standby")).as("FAILED: nobody here contends").isEqualTo(0.0);
    assertThat(count(Names.LOST_TERMS, "reason", reason)).isEqualTo(1.0);
    assertThat(count(Names.ACQUISITIONS)).isEqualTo(1.0);
  }

  @Test
  void closeUnsubscribesSoNoMeterReappearsInLaterTerms(TestDatabase db) throws Exception {
    LeaderLoop loop = loop(db, newKey(), "a", FailurePolicy.STEP_DOWN);
    PrometheusMeterRegistry prometheus = TestTerms.prometheus();
    LeaderMetrics m = LeaderMetrics.builder(loop).lockName("queue-state").build();
    m.bindTo(prometheus);
    loop.start(ctx -> {});
    await().atMost(WITHIN).until(m::isLeader);

    m.close();

    assertThat(prometheus.getMeters()).isEmpty();
    assertThat(loop.removeListener(m.listenerForTests())).as("still subscribed").isFalse();
    // The loop loses its term and leads again; the closed metrics hear none of it.
    assertThat(db.terminateBackend(loop.currentTerm().orElseThrow().backendPid())).isTrue();
    await().atMost(WITHIN).until(() -> loop.currentTerm().map(Term::number).orElse(0L) >= 2);
    assertThat(m.isLeader()).isFalse();
    assertThat(prometheus.getMeters()).isEmpty();
    assertThat(prometheus.scrape()).doesNotContain("retsu_lock");
  }

  /**
   * A hand-over between two real loops: the old leader's term is recorded once it ends, the
   * standby's wait once it wins, both in a Prometheus scrape under their documented names.
   */
  @Test
  void aHandOverRecordsTheEndedTermAndTheStandbysWaitInAPrometheusScrape(TestDatabase db)
      throws Exception {
    PrometheusMeterRegistry prometheus = TestTerms.prometheus();
    LockKey key = newKey();
    LeaderLoop a = loop(db, key, "a", FailurePolicy.STEP_DOWN);
    LeaderLoop b = loop(db, key, "b", FailurePolicy.STEP_DOWN);
    for (LeaderLoop l : List.of(a, b)) {
      LeaderMetrics m = LeaderMetrics.builder(l).lockName("handover").build();
      m.bindTo(prometheus);
      closeables.add(m);
    }
    a.start(ctx -> {});
    await().atMost(WITHIN).until(a::isLeader);
    b.start(ctx -> {});
    await().atMost(WITHIN).until(() -> heldElsewhere(prometheus));
    assertThat(timerCount(prometheus, Names.ACQUIRE_WAIT, "a")).as("a won at once").isEqualTo(1);
    assertThat(timerCount(prometheus, Names.ACQUIRE_WAIT, "b")).as("b still waits").isZero();

    a.close();
    await().atMost(WITHIN).until(b::isLeader);

    assertThat(timerCount(prometheus, Names.TERM_DURATION, "a")).isEqualTo(1);
    assertThat(timerCount(prometheus, Names.TERM_DURATION, "b")).as("b's term runs").isZero();
    assertThat(timerCount(prometheus, Names.ACQUIRE_WAIT, "b")).isEqualTo(1);
    assertThat(
            prometheus
                .get(Names.ACQUIRE_WAIT)
                .tags("candidate", "b")
                .timer()
                .totalTime(TimeUnit.NANOSECONDS))
        .as("b waited through a's term")
        .isPositive();
    assertThat(prometheus.scrape())
        .contains("retsu_lock_term_duration_seconds_count{candidate=\"a\",lock=\"handover\"} 1\n")
        .contains("retsu_lock_acquire_wait_seconds_count{candidate=\"b\",lock=\"handover\"} 1\n")
        .contains("retsu_lock_acquire_wait_seconds_sum{candidate=\"b\",lock=\"handover\"} ")
        .contains("retsu_lock_term_duration_seconds_max{candidate=\"a\",lock=\"handover\"} ");
  }

  private static boolean heldElsewhere(PrometheusMeterRegistry r) {
    return r.get(Names.ATTEMPTS)
            .tags("candidate", "b", "result", "held_elsewhere")
            .counter()
            .count()
        >= 1;
  }

  private static long timerCount(PrometheusMeterRegistry r, String name, String candidate) {
    return r.get(name).tags("candidate", candidate).timer().count();
  }

  private double refreshes(String outcome) {
    return registry.get(Names.REFRESH).tags("outcome", outcome).timer().count();
  }
}
