package dev.retsu.lock.micrometer;

import static dev.retsu.lock.micrometer.TestTerms.KEY;
import static dev.retsu.lock.micrometer.TestTerms.term;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retsu.lock.AttemptResult;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.MockClock;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleConfig;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class LeaderMetricsTest {

  private final MockClock clock = new MockClock();
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry(SimpleConfig.DEFAULT, clock);

  private LeaderMetrics bound(String candidate) {
    LeaderMetrics m = LeaderMetrics.builder(KEY, candidate).lockName("queue-state").build();
    m.bindTo(registry);
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

  @Test
  void aBoundStandbyExportsStandbyAndZeroForEveryResultAndReason() {
    bound("a");

    assertThat(state("a", "standby")).isEqualTo(1.0);
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
  void countsAttemptsByResult() {
    LeaderMetrics m = bound("a");

    m.onAttempt(AttemptResult.HELD_ELSEWHERE, Duration.ofMillis(3), null);
    m.onAttempt(AttemptResult.HELD_ELSEWHERE, Duration.ofMillis(3), null);
    m.onAttempt(AttemptResult.ERROR, Duration.ofMillis(3), new IllegalStateException("down"));
    m.onAttempt(AttemptResult.ACQUIRED, Duration.ofMillis(3), null);

    assertThat(count(Names.ATTEMPTS, "result", "held_elsewhere")).isEqualTo(2.0);
    assertThat(count(Names.ATTEMPTS, "result", "error")).isEqualTo(1.0);
    assertThat(count(Names.ATTEMPTS, "result", "acquired")).isEqualTo(1.0);
  }

  @Test
  void aTermIsCountedTimedAndEndedWithItsReason() {
    LeaderMetrics m = bound("a");
    Term term = term(1, "a");

    m.onAcquired(term);
    clock.add(30, TimeUnit.SECONDS);

    assertThat(m.isLeader()).isTrue();
    assertThat(state("a", "leader")).isEqualTo(1.0);
    assertThat(state("a", "standby")).isEqualTo(0.0);
    assertThat(count(Names.ACQUISITIONS)).isEqualTo(1.0);
    assertThat(registry.get(Names.TERM).longTaskTimer().activeTasks()).isEqualTo(1);
    assertThat(registry.get(Names.TERM).longTaskTimer().duration(TimeUnit.SECONDS)).isEqualTo(30.0);

    m.onLost(term, LossReason.SESSION_LOST, new IllegalStateException("57P01"));

    assertThat(m.isLeader()).isFalse();
    assertThat(state("a", "leader")).isEqualTo(0.0);
    assertThat(state("a", "standby")).isEqualTo(1.0);
    assertThat(registry.get(Names.TERM).longTaskTimer().activeTasks()).isZero();
    assertThat(count(Names.LOST_TERMS, "reason", "session_lost")).isEqualTo(1.0);
    assertThat(count(Names.LOST_TERMS, "reason", "closed")).isZero();
    assertThat(count(Names.SELF_FENCED_TERMS)).isZero();
  }

  @Test
  void selfFencingCountsAsALostTermAndAsASelfFencedTerm() {
    LeaderMetrics m = bound("a");
    Term term = term(1, "a");
    m.onAcquired(term);

    m.onLost(term, LossReason.SELF_FENCED, new IllegalStateException("deadline"));

    assertThat(count(Names.LOST_TERMS, "reason", "self_fenced")).isEqualTo(1.0);
    assertThat(count(Names.SELF_FENCED_TERMS)).isEqualTo(1.0);
  }

  @Test
  void refreshesAreTimedByOutcome() {
    LeaderMetrics m = bound("a");
    Term term = term(1, "a");
    m.onAcquired(term);

    m.onRefreshSucceeded(term, Duration.ofMillis(40));
    m.onRefreshSucceeded(term, Duration.ofMillis(60));
    m.onRefreshFailed(term, Duration.ofMillis(500), new IllegalStateException("query failed"));

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

    m.onAttempt(AttemptResult.ACQUIRED, Duration.ZERO, null);
    m.onAcquired(term(1, "a"));
    m.onRefreshSucceeded(term(1, "a"), Duration.ZERO);
    m.onLost(term(1, "a"), LossReason.CLOSED, null);

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

    LeaderMetrics twin = LeaderMetrics.builder(KEY, "a").lockName("queue-state").build();
    assertThatThrownBy(() -> twin.bindTo(registry))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("already has retsu.lock.leader meters for this lock and candidate");
  }

  @Test
  void theLockTagDefaultsToTheKeyInHex() {
    assertThat(LeaderMetrics.of(LockKey.of(42L), "a").lockName()).isEqualTo("0x000000000000002a");
    assertThat(LeaderMetrics.of(LockKey.of(-1L), "a").lockName()).isEqualTo("0xffffffffffffffff");
    assertThat(LeaderMetrics.of(LockKey.of(42, 7), "a").lockName())
        .isEqualTo("0x0000002a:0x00000007");
    assertThat(LeaderMetrics.of(LockKey.named("retsu", "queue-state"), "a").lockName())
        .matches("0x[0-9a-f]{16}");
  }

  @Test
  void extraTagsGoOnEveryMeter() {
    LeaderMetrics m = LeaderMetrics.builder(KEY, "a").tags(Tags.of("service", "billing")).build();
    m.bindTo(registry);

    assertThat(registry.getMeters())
        .isNotEmpty()
        .allSatisfy(meter -> assertThat(meter.getId().getTag("service")).isEqualTo("billing"));
  }

  @Test
  void builderRejectsBadArguments() {
    assertThatThrownBy(() -> LeaderMetrics.builder(null, "a"))
        .isInstanceOf(NullPointerException.class)
        .hasMessage("key");
    assertThatThrownBy(() -> LeaderMetrics.builder(KEY, null))
        .isInstanceOf(NullPointerException.class)
        .hasMessage("candidateId");
    assertThatThrownBy(() -> LeaderMetrics.builder(KEY, ""))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("candidateId must not be empty");
    assertThatThrownBy(() -> LeaderMetrics.builder(KEY, "a").lockName(" "))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("lockName must not be blank, but was \" \"");
    assertThatThrownBy(() -> LeaderMetrics.builder(KEY, "a").tags(Tags.of("state", "x")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("tags must not use the key state, which LeaderMetrics sets itself");
  }

  @Test
  void listenerMethodsNeverThrowAndLaterEventsStillCount() {
    LeaderMetrics m = bound("a");
    Term term = term(1, "a");

    assertThatCode(
            () -> {
              m.onAttempt(null, Duration.ZERO, null);
              m.onAcquired(term);
              m.onRefreshSucceeded(term, null);
              m.onRefreshFailed(term, null, null);
              m.onLost(term, null, null);
            })
        .doesNotThrowAnyException();

    m.onAcquired(term(2, "a"));
    m.onRefreshSucceeded(term(2, "a"), Duration.ofMillis(5));
    assertThat(count(Names.ACQUISITIONS)).isEqualTo(2.0);
    assertThat(registry.get(Names.REFRESH).tags("outcome", "success").timer().count()).isEqualTo(1);
    assertThat(state("a", "leader")).isEqualTo(1.0);
  }

  @Test
  void aTermThatStartedBeforeBindingIsShownOnceBound() {
    LeaderMetrics m = LeaderMetrics.builder(KEY, "a").lockName("queue-state").build();
    m.onAcquired(term(1, "a"));

    m.bindTo(registry);

    assertThat(state("a", "leader")).isEqualTo(1.0);
    assertThat(registry.get(Names.TERM).longTaskTimer().activeTasks()).isEqualTo(1);
  }

  @Test
  void everyMeterHasADescriptionAndEveryCountOrTimeHasABaseUnit() {
    bound("a");

    assertThat(registry.getMeters())
        .allSatisfy(m -> assertThat(m.getId().getDescription()).isNotBlank());
    assertThat(registry.getMeters())
        .filteredOn(m -> !m.getId().getName().equals(Names.LEADER))
        .allSatisfy(m -> assertThat(m.getId().getBaseUnit()).isNotBlank());
  }

  @Test
  void gaugesStillReportAfterGarbageCollection() {
    bindAndForget(registry);

    System.gc();

    assertThat(state("a", "leader")).isEqualTo(1.0);
    assertThat(state("a", "standby")).isEqualTo(0.0);
  }

  /** Leaves the metrics reachable only through the registry's gauges. */
  private static void bindAndForget(MeterRegistry registry) {
    LeaderMetrics m = LeaderMetrics.builder(KEY, "a").lockName("queue-state").build();
    m.bindTo(registry);
    m.onAcquired(term(1, "a"));
  }

  @Test
  void prometheusScrapeHasTheDocumentedNames() {
    PrometheusMeterRegistry prometheus = TestTerms.prometheus();
    LeaderMetrics m = LeaderMetrics.builder(KEY, "a").lockName("queue-state").build();
    m.bindTo(prometheus);
    Term term = term(1, "a");
    m.onAttempt(AttemptResult.ACQUIRED, Duration.ofMillis(2), null);
    m.onAcquired(term);
    m.onRefreshSucceeded(term, Duration.ofMillis(40));

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
        .contains("# HELP retsu_lock_leader ");
    assertThat(TestTerms.samples(prometheus, "queue_")).isEmpty();
  }

  private static List<Meter.Id> ids(MeterRegistry registry) {
    return registry.getMeters().stream().map(Meter::getId).collect(Collectors.toList());
  }
}
