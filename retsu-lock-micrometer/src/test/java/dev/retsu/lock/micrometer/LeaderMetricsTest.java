package dev.retsu.lock.micrometer;

import static dev.retsu.lock.micrometer.TestTerms.idleLoop;
import static dev.retsu.lock.micrometer.TestTerms.term;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retsu.lock.AttemptResult;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.MockClock;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleConfig;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * Made-up events fed to the listener that {@code bindTo} subscribes, on loops that never run (state
 * NEW, so the standby series is 0 throughout). {@link LeaderMetricsLoopIntegrationTest} runs real
 * loops.
 */
class LeaderMetricsTest {

  private final MockClock clock = new MockClock();
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry(SimpleConfig.DEFAULT, clock);

  private LeaderMetrics bound(String candidate) {
    LeaderMetrics m = LeaderMetrics.builder(idleLoop(candidate)).lockName("queue-state").build();
    m.bindTo(registry);
    return m;
  }

  private static LeaderListener on(LeaderMetrics m) {
    return m.listenerForTests();
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

  @Test
  void aBoundLoopThatHasNotStartedExportsZeroInBothStatesAndForEveryResultAndReason() {
    bound("a");

    assertThat(state("a", "standby")).isEqualTo(0.0);
    assertThat(state("a", "leader")).isEqualTo(0.0);
    assertThat(registry.get(Names.ATTEMPTS).counters()).hasSize(AttemptResult.values().length);
    assertThat(registry.get(Names.LOST_TERMS).counters()).hasSize(LossReason.values().length);
    assertThat(registry.get(Names.REFRESH).timers()).hasSize(2);
    assertThat(registry.getMeters())
        .allSatisfy(
            m -> {
              assertThat(m.getId().getTag("lock")).isEqualTo("queue-state");
              assertThat(m.getId().getTag("candidate")).isEqualTo("a");
            });
  }

  @Test
  void theCandidateAndTheDefaultLockTagComeFromTheLoop() {
    LeaderLoop loop = idleLoop(LockKey.of(7L), "worker-7");

    LeaderMetrics m = LeaderMetrics.of(loop);

    assertThat(m.loop()).isSameAs(loop);
    assertThat(m.candidateId()).isEqualTo("worker-7");
    assertThat(m.lockName()).isEqualTo("0x0000000000000007");
    assertThat(m.tags())
        .containsExactly(Tag.of("candidate", "worker-7"), Tag.of("lock", m.lockName()));
  }

  @Test
  void bindToSubscribesToTheLoopOnceAndCloseUnsubscribes() {
    LeaderLoop loop = idleLoop("a");
    LeaderMetrics m = LeaderMetrics.of(loop);
    assertThat(loop.removeListener(on(m))).as("subscribed before bindTo").isFalse();

    m.bindTo(registry);
    assertThat(loop.removeListener(on(m))).as("subscribed by bindTo").isTrue();
    assertThat(loop.removeListener(on(m))).as("subscribed twice").isFalse();
    loop.addListener(on(m));

    m.close();
    assertThat(loop.removeListener(on(m))).as("subscribed after close").isFalse();
    // Not a LeaderListener itself: it cannot be handed to a loop builder, or subscribed twice.
    assertThat(LeaderListener.class.isAssignableFrom(LeaderMetrics.class)).isFalse();
  }

  @Test
  void countsAttemptsByResult() {
    LeaderMetrics m = bound("a");

    on(m).onAttempt(AttemptResult.HELD_ELSEWHERE, Duration.ofMillis(3), null);
    on(m).onAttempt(AttemptResult.HELD_ELSEWHERE, Duration.ofMillis(3), null);
    on(m).onAttempt(AttemptResult.ERROR, Duration.ofMillis(3), new IllegalStateException("down"));
    on(m).onAttempt(AttemptResult.ACQUIRED, Duration.ofMillis(3), null);

    assertThat(count(Names.ATTEMPTS, "result", "held_elsewhere")).isEqualTo(2.0);
    assertThat(count(Names.ATTEMPTS, "result", "error")).isEqualTo(1.0);
    assertThat(count(Names.ATTEMPTS, "result", "acquired")).isEqualTo(1.0);
  }

  @Test
  void aTermIsCountedTimedAndEndedWithItsReason() {
    LeaderMetrics m = bound("a");
    Term term = term(1, "a");

    on(m).onAcquired(term);
    clock.add(30, TimeUnit.SECONDS);

    assertThat(m.isLeader()).isTrue();
    assertThat(state("a", "leader")).isEqualTo(1.0);
    assertThat(state("a", "standby")).isEqualTo(0.0);
    assertThat(count(Names.ACQUISITIONS)).isEqualTo(1.0);
    assertThat(registry.get(Names.TERM).longTaskTimer().activeTasks()).isEqualTo(1);
    assertThat(registry.get(Names.TERM).longTaskTimer().duration(TimeUnit.SECONDS)).isEqualTo(30.0);

    on(m).onLost(term, LossReason.SESSION_LOST, new IllegalStateException("57P01"));

    assertThat(m.isLeader()).isFalse();
    assertThat(state("a", "leader")).isEqualTo(0.0);
    assertThat(state("a", "standby")).as("the loop does not run").isEqualTo(0.0);
    assertThat(registry.get(Names.TERM).longTaskTimer().activeTasks()).isZero();
    assertThat(count(Names.LOST_TERMS, "reason", "session_lost")).isEqualTo(1.0);
    assertThat(count(Names.LOST_TERMS, "reason", "closed")).isZero();
    assertThat(count(Names.SELF_FENCED_TERMS)).isZero();
  }

  @Test
  void selfFencingCountsAsALostTermAndAsASelfFencedTerm() {
    LeaderMetrics m = bound("a");
    Term term = term(1, "a");
    on(m).onAcquired(term);

    on(m).onLost(term, LossReason.SELF_FENCED, new IllegalStateException("deadline"));

    assertThat(count(Names.LOST_TERMS, "reason", "self_fenced")).isEqualTo(1.0);
    assertThat(count(Names.SELF_FENCED_TERMS)).isEqualTo(1.0);
  }

  @Test
  void refreshesAreTimedByOutcome() {
    LeaderMetrics m = bound("a");
    Term term = term(1, "a");
    on(m).onAcquired(term);

    on(m).onRefreshSucceeded(term, Duration.ofMillis(40));
    on(m).onRefreshSucceeded(term, Duration.ofMillis(60));
    on(m).onRefreshFailed(term, Duration.ofMillis(500), new IllegalStateException("query failed"));

    var success = registry.get(Names.REFRESH).tags("outcome", "success").timer();
    var failure = registry.get(Names.REFRESH).tags("outcome", "failure").timer();
    assertThat(success.count()).isEqualTo(2);
    assertThat(success.totalTime(TimeUnit.MILLISECONDS)).isEqualTo(100.0);
    assertThat(failure.count()).isEqualTo(1);
    assertThat(failure.totalTime(TimeUnit.MILLISECONDS)).isEqualTo(500.0);
  }

  @Test
  void closeRemovesExactlyTheMetersItRegistered() {
    registry.counter("unrelated.counter", "lock", "queue-state", "candidate", "a");
    LeaderMetrics other = bound("b");
    List<Meter.Id> before = ids(registry);
    LeaderMetrics m = bound("a");
    assertThat(registry.getMeters()).hasSizeGreaterThan(before.size());

    m.close();

    assertThat(ids(registry)).containsExactlyInAnyOrderElementsOf(before);
    assertThat(registry.find(Names.LEADER).tag("candidate", "b").gauges()).hasSize(2);
    other.close();
    assertThat(ids(registry)).extracting(Meter.Id::getName).containsExactly("unrelated.counter");
  }

  @Test
  void closeIsIdempotentAndLaterEventsRegisterNothing() {
    LeaderMetrics m = bound("a");
    m.close();
    m.close();

    on(m).onAttempt(AttemptResult.ACQUIRED, Duration.ZERO, null);
    on(m).onAcquired(term(1, "a"));
    on(m).onRefreshSucceeded(term(1, "a"), Duration.ZERO);
    on(m).onLost(term(1, "a"), LossReason.CLOSED, null);

    assertThat(registry.getMeters()).isEmpty();
    assertThatThrownBy(() -> m.bindTo(registry))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("closed");
  }

  @Test
  void bindsToOneRegistryOnlyAndOncePerLockAndCandidate() {
    LeaderMetrics m = bound("a");
    assertThatThrownBy(() -> m.bindTo(new SimpleMeterRegistry()))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("bound to a registry already");

    LeaderMetrics twin = LeaderMetrics.builder(idleLoop("a")).lockName("queue-state").build();
    assertThatThrownBy(() -> twin.bindTo(registry))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("already has retsu.lock.leader meters for this lock and candidate");
  }

  @Test
  void theLockTagDefaultsToTheKeyInHex() {
    assertThat(LeaderMetrics.of(idleLoop(LockKey.of(42L), "a")).lockName())
        .isEqualTo("0x000000000000002a");
    assertThat(LeaderMetrics.of(idleLoop(LockKey.of(-1L), "a")).lockName())
        .isEqualTo("0xffffffffffffffff");
    assertThat(LeaderMetrics.of(idleLoop(LockKey.of(42, 7), "a")).lockName())
        .isEqualTo("0x0000002a:0x00000007");
    assertThat(LeaderMetrics.of(idleLoop(LockKey.named("retsu", "queue-state"), "a")).lockName())
        .matches("0x[0-9a-f]{16}");
  }

  @Test
  void extraTagsGoOnEveryMeter() {
    LeaderMetrics m =
        LeaderMetrics.builder(idleLoop("a")).tags(Tags.of("service", "billing")).build();
    m.bindTo(registry);

    assertThat(registry.getMeters())
        .isNotEmpty()
        .allSatisfy(meter -> assertThat(meter.getId().getTag("service")).isEqualTo("billing"));
  }

  @Test
  void builderRejectsBadArguments() {
    assertThatThrownBy(() -> LeaderMetrics.builder(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessage("loop");
    assertThatThrownBy(() -> LeaderMetrics.of(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessage("loop");
    assertThatThrownBy(() -> LeaderMetrics.builder(idleLoop("a")).lockName(" "))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("lockName must not be blank, but was \" \"");
    assertThatThrownBy(() -> LeaderMetrics.builder(idleLoop("a")).tags(Tags.of("state", "x")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("tags must not use the key state, which LeaderMetrics sets itself");
  }

  @Test
  void listenerMethodsNeverThrowAndLaterEventsStillCount() {
    LeaderMetrics m = bound("a");
    Term term = term(1, "a");

    assertThatCode(
            () -> {
              on(m).onAttempt(null, Duration.ZERO, null);
              on(m).onAcquired(term);
              on(m).onRefreshSucceeded(term, null);
              on(m).onRefreshFailed(term, null, null);
              on(m).onLost(term, null, null);
            })
        .doesNotThrowAnyException();

    on(m).onAcquired(term(2, "a"));
    on(m).onRefreshSucceeded(term(2, "a"), Duration.ofMillis(5));
    assertThat(count(Names.ACQUISITIONS)).isEqualTo(2.0);
    assertThat(registry.get(Names.REFRESH).tags("outcome", "success").timer().count()).isEqualTo(1);
    assertThat(state("a", "leader")).isEqualTo(1.0);
  }

  @Test
  void eventsBeforeBindToAreNotHeard() {
    LeaderMetrics m = LeaderMetrics.builder(idleLoop("a")).lockName("queue-state").build();

    m.bindTo(registry);

    assertThat(m.isLeader()).isFalse();
    assertThat(state("a", "leader")).isEqualTo(0.0);
    assertThat(registry.get(Names.TERM).longTaskTimer().activeTasks()).isZero();
  }

  @Test
  void everyMeterHasADescriptionAndEveryCountOrTimeHasABaseUnit() {
    bound("a");

    assertThat(registry.getMeters())
        .allSatisfy(m -> assertThat(m.getId().getDescription()).isNotBlank());
    assertThat(registry.getMeters())
        .filteredOn(
            m ->
                !m.getId().getName().equals(Names.LEADER)
                    && !m.getId().getName().equals(Names.SESSION_PROXIED)
                    && !m.getId().getName().equals(Names.HOLDER_FOREIGN))
        .allSatisfy(m -> assertThat(m.getId().getBaseUnit()).isNotBlank());
  }

  @Test
  void gaugesStillReportAfterGarbageCollection() {
    bindAndForget(registry);

    System.gc();

    assertThat(state("a", "leader")).isEqualTo(1.0);
    assertThat(state("a", "standby")).isEqualTo(0.0);
  }

  /**
   * The wait runs from the first attempt's start (its duration before the event) to the win, then
   * from each loss to the next win; each term is recorded when it ends, on the registry's clock.
   */
  @Test
  void waitsForLeadershipAndEndedTermsAreTimedOnTheRegistrysClock() {
    LeaderMetrics m = bound("a");
    on(m).onAttempt(AttemptResult.HELD_ELSEWHERE, Duration.ofMillis(3), null);
    clock.add(Duration.ofSeconds(10));
    on(m).onAttempt(AttemptResult.ERROR, Duration.ofMillis(5), new IllegalStateException("down"));
    on(m).onAttempt(AttemptResult.ACQUIRED, Duration.ofMillis(2), null);
    on(m).onAcquired(term(1, "a"));
    assertThat(timer(Names.ACQUIRE_WAIT).count()).isEqualTo(1);
    assertThat(timer(Names.ACQUIRE_WAIT).totalTime(TimeUnit.MILLISECONDS)).isEqualTo(10_003.0);
    assertThat(timer(Names.TERM_DURATION).count()).as("the term runs").isZero();

    clock.add(Duration.ofSeconds(60));
    on(m).onLost(term(1, "a"), LossReason.SESSION_LOST, null);
    assertThat(timer(Names.TERM_DURATION).count()).isEqualTo(1);
    assertThat(timer(Names.TERM_DURATION).totalTime(TimeUnit.SECONDS)).isEqualTo(60.0);

    clock.add(Duration.ofSeconds(4));
    on(m).onAttempt(AttemptResult.HELD_ELSEWHERE, Duration.ofMillis(3), null);
    clock.add(Duration.ofSeconds(1));
    on(m).onAttempt(AttemptResult.ACQUIRED, Duration.ofMillis(2), null);
    on(m).onAcquired(term(2, "a"));
    assertThat(timer(Names.ACQUIRE_WAIT).count()).isEqualTo(2);
    assertThat(timer(Names.ACQUIRE_WAIT).max(TimeUnit.MILLISECONDS))
        .as("the first wait, the longer one")
        .isEqualTo(10_003.0);
    assertThat(timer(Names.ACQUIRE_WAIT).totalTime(TimeUnit.MILLISECONDS))
        .as("the second wait runs from the loss, not from its own first attempt")
        .isEqualTo(10_003.0 + 5_000.0);

    clock.add(Duration.ofSeconds(30));
    on(m).onLost(term(2, "a"), LossReason.CLOSED, null);
    assertThat(timer(Names.TERM_DURATION).count()).isEqualTo(2);
    assertThat(timer(Names.TERM_DURATION).totalTime(TimeUnit.SECONDS)).isEqualTo(90.0);
  }

  @Test
  void aWinWithoutAHeardAttemptRecordsNoWaitAndALossWithoutAHeardStartNoTerm() {
    LeaderMetrics m = bound("a");

    on(m).onAcquired(term(1, "a")); // no attempt heard: the wait's start is unknown
    assertThat(timer(Names.ACQUIRE_WAIT).count()).isZero();
    m.close();

    LeaderMetrics again = bound("a");
    on(again).onLost(term(1, "a"), LossReason.CLOSED, null); // a start this instance never saw
    assertThat(timer(Names.TERM_DURATION).count()).isZero();
    assertThat(count(Names.LOST_TERMS, "reason", "closed")).isEqualTo(1.0);
  }

  private io.micrometer.core.instrument.Timer timer(String name) {
    return registry.get(name).timer();
  }

  /** Leaves the metrics reachable only through the registry's gauges. */
  private static void bindAndForget(MeterRegistry registry) {
    LeaderMetrics m = LeaderMetrics.builder(idleLoop("a")).lockName("queue-state").build();
    m.bindTo(registry);
    on(m).onAcquired(term(1, "a"));
  }

  @Test
  void prometheusScrapeHasTheDocumentedNames() {
    PrometheusMeterRegistry prometheus = TestTerms.prometheus();
    LeaderMetrics m = LeaderMetrics.builder(idleLoop("a")).lockName("queue-state").build();
    m.bindTo(prometheus);
    Term term = term(1, "a");
    on(m).onAttempt(AttemptResult.ACQUIRED, Duration.ofMillis(2), null);
    on(m).onAcquired(term);
    on(m).onRefreshSucceeded(term, Duration.ofMillis(40));

    String scrape = prometheus.scrape();

    assertThat(scrape)
        .contains("retsu_lock_leader{candidate=\"a\",lock=\"queue-state\",state=\"leader\"} 1.0")
        .contains("retsu_lock_leader{candidate=\"a\",lock=\"queue-state\",state=\"standby\"} 0.0")
        .contains("retsu_lock_acquisitions_total{candidate=\"a\",lock=\"queue-state\"} 1.0")
        .contains(
            "retsu_lock_attempts_total{candidate=\"a\",lock=\"queue-state\",result=\"acquired\"} 1.0")
        .contains("retsu_lock_term_seconds_count{candidate=\"a\",lock=\"queue-state\"} 1\n")
        .contains(
            "retsu_lock_refresh_seconds_count{candidate=\"a\",lock=\"queue-state\",outcome=\"success\"} 1")
        .contains(
            "retsu_lock_lost_terms_total{candidate=\"a\",lock=\"queue-state\",reason=\"self_fenced\"} 0.0")
        .contains("retsu_lock_self_fenced_terms_total{candidate=\"a\",lock=\"queue-state\"} 0.0")
        .contains("retsu_lock_acquire_wait_seconds_count{candidate=\"a\",lock=\"queue-state\"} 1\n")
        .contains("retsu_lock_acquire_wait_seconds_max{candidate=\"a\",lock=\"queue-state\"} ")
        .contains(
            "retsu_lock_term_duration_seconds_count{candidate=\"a\",lock=\"queue-state\"} 0\n")
        .contains(
            "# HELP retsu_lock_leader Leadership of this candidate: state=leader is 1 while its loop"
                + " leads a term; state=standby is 1 while its loop runs and does not lead"
                + " (contending); both are 0 before the loop runs and after it stopped (closed or"
                + " failed)\n");
    assertThat(TestTerms.samples(prometheus, "queue_")).isEmpty();
  }

  private static List<Meter.Id> ids(MeterRegistry registry) {
    return registry.getMeters().stream().map(Meter::getId).collect(Collectors.toList());
  }
}
