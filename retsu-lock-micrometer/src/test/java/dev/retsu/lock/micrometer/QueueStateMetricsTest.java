package dev.retsu.lock.micrometer;

import static dev.retsu.lock.micrometer.TestTerms.idleLoop;
import static dev.retsu.lock.micrometer.TestTerms.samples;
import static dev.retsu.lock.micrometer.TestTerms.term;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * Made-up events fed to the listener that {@code bindTo} subscribes, on loops that never run.
 * {@link QueueStateFailoverIntegrationTest} runs real loops.
 */
class QueueStateMetricsTest {

  private static final Clock CLOCK =
      Clock.fixed(Instant.parse("2026-01-01T00:00:00Z"), ZoneOffset.UTC);
  private static final List<String> QUEUE_METERS =
      List.of(
          Names.QUEUE_MESSAGES_READY,
          Names.QUEUE_MESSAGES_IN_FLIGHT,
          Names.QUEUE_MESSAGES_SCHEDULED,
          Names.QUEUE_MESSAGES_DEAD,
          Names.QUEUE_OLDEST_READY_AGE);

  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

  private static QueueStateMetrics bound(MeterRegistry registry, int budget) {
    QueueStateMetrics m =
        QueueStateMetrics.builder(idleLoop("a")).maxQueueSeries(budget).clock(CLOCK).build();
    m.bindTo(registry);
    return m;
  }

  private static LeaderListener on(QueueStateMetrics m) {
    return m.listenerForTests();
  }

  private QueueStateMetrics bound() {
    return bound(registry, QueueStateMetrics.DEFAULT_MAX_QUEUE_SERIES);
  }

  private static QueueStateSnapshot twoQueues() {
    return QueueStateSnapshot.builder()
        .queue("orders", 12, 3, 2, 1, 4.5)
        .queue("emails", 0, 0, 7, 0, 0)
        .collectionDuration(Duration.ofMillis(40))
        .build();
  }

  private double ready(String queue) {
    return registry.get(Names.QUEUE_MESSAGES_READY).tag("queue", queue).gauge().value();
  }

  private double status(String name) {
    return registry.get(name).gauge().value();
  }

  private Map<String, Double> series(String name) {
    return registry.find(name).gauges().stream()
        .collect(Collectors.toMap(g -> g.getId().getTag("queue"), Gauge::value));
  }

  @Test
  void aReplicaThatHasNotLedRegistersNothingEvenWhenRecordIsCalled() {
    PrometheusMeterRegistry prometheus = TestTerms.prometheus();
    QueueStateMetrics m = bound(prometheus, 100);

    assertThat(m.record(twoQueues())).isFalse();
    m.recordFailure(new IllegalStateException("query failed"));

    assertThat(m.isExporting()).isFalse();
    assertThat(prometheus.getMeters()).isEmpty();
    assertThat(samples(prometheus, "queue_")).isEmpty();
  }

  @Test
  void aNewLeaderRegistersNothingUntilItsFirstRecord() {
    QueueStateMetrics m = bound();

    on(m).onAcquired(term(1, "a"));

    assertThat(registry.getMeters()).isEmpty();
    assertThat(m.record(twoQueues())).isTrue();
    assertThat(m.isExporting()).isTrue();
    assertThat(ready("orders")).isEqualTo(12.0);
  }

  @Test
  void theLeadersScrapeHasEveryDocumentedSeries() {
    PrometheusMeterRegistry prometheus = TestTerms.prometheus();
    QueueStateMetrics m = bound(prometheus, 100);
    on(m).onAcquired(term(1, "a"));

    m.record(twoQueues());

    assertThat(samples(prometheus, "queue_"))
        .containsExactlyInAnyOrder(
            "queue_messages_ready{queue=\"orders\"} 12.0",
            "queue_messages_ready{queue=\"emails\"} 0.0",
            "queue_messages_in_flight{queue=\"orders\"} 3.0",
            "queue_messages_in_flight{queue=\"emails\"} 0.0",
            "queue_messages_scheduled{queue=\"orders\"} 2.0",
            "queue_messages_scheduled{queue=\"emails\"} 7.0",
            "queue_messages_dead{queue=\"orders\"} 1.0",
            "queue_messages_dead{queue=\"emails\"} 0.0",
            "queue_oldest_ready_age_seconds{queue=\"orders\"} 4.5",
            "queue_oldest_ready_age_seconds{queue=\"emails\"} 0.0",
            "queue_state_collection_success 1.0",
            "queue_state_collection_duration_seconds 0.04",
            "queue_state_collection_last_success_timestamp_seconds 1.7672256E9",
            "queue_state_folded_queues 0.0");
    assertThat(prometheus.scrape())
        .contains("# HELP queue_messages_ready Messages ready for delivery")
        .contains("# TYPE queue_oldest_ready_age_seconds gauge");
  }

  @Test
  void aFailedCollectionShowsZeroUntilTheNextGoodOne() {
    QueueStateMetrics m = bound();
    Term term = term(1, "a");
    on(m).onAcquired(term);
    m.record(twoQueues());

    m.recordFailure(new IllegalStateException("query failed"));
    assertThat(status(Names.QUEUE_STATE_COLLECTION_SUCCESS)).isZero();
    assertThat(ready("orders")).isEqualTo(12.0);

    m.record(twoQueues());
    assertThat(status(Names.QUEUE_STATE_COLLECTION_SUCCESS)).isEqualTo(1.0);

    on(m).onRefreshFailed(term, Duration.ofSeconds(1), new IllegalStateException("task threw"));
    assertThat(status(Names.QUEUE_STATE_COLLECTION_SUCCESS)).isZero();
  }

  @Test
  void aFailureBeforeTheTermsFirstRecordRegistersNothing() {
    QueueStateMetrics m = bound();
    Term term = term(1, "a");
    on(m).onAcquired(term);

    m.recordFailure(new IllegalStateException("query failed"));
    on(m).onRefreshFailed(term, Duration.ofSeconds(1), new IllegalStateException("task threw"));

    assertThat(registry.getMeters()).isEmpty();
  }

  @Test
  void theTermsEndRemovesEveryGaugeAndTheNextTermBringsThemBack() {
    PrometheusMeterRegistry prometheus = TestTerms.prometheus();
    QueueStateMetrics m = bound(prometheus, 100);
    Term first = term(1, "a");
    on(m).onAcquired(first);
    m.record(twoQueues());

    on(m).onLost(first, LossReason.SESSION_LOST, new IllegalStateException("57P01"));

    assertThat(m.isExporting()).isFalse();
    assertThat(prometheus.getMeters()).isEmpty();
    assertThat(samples(prometheus, "queue_")).isEmpty();
    assertThat(m.record(twoQueues())).as("record after the term ended").isFalse();
    assertThat(prometheus.getMeters()).isEmpty();

    on(m).onAcquired(term(2, "a"));
    assertThat(samples(prometheus, "queue_")).isEmpty();
    m.record(twoQueues());
    assertThat(samples(prometheus, "queue_")).hasSize(14);
  }

  @Test
  void aQueueThatDisappearsLosesItsSeries() {
    QueueStateMetrics m = bound();
    on(m).onAcquired(term(1, "a"));
    m.record(twoQueues());

    m.record(QueueStateSnapshot.builder().queue("orders", 5, 0, 0, 0, 1).build());

    for (String name : QUEUE_METERS) {
      assertThat(series(name)).containsOnlyKeys("orders");
    }
    assertThat(ready("orders")).isEqualTo(5.0);
  }

  @Test
  void newValuesOfTheSameQueuesUpdateTheRegisteredGaugesInPlace() {
    QueueStateMetrics m = bound(registry, 1);
    on(m).onAcquired(term(1, "a"));
    m.record(twoQueues());
    Gauge orders = registry.get(Names.QUEUE_MESSAGES_READY).tag("queue", "orders").gauge();
    Gauge other = registry.get(Names.QUEUE_MESSAGES_SCHEDULED).tag("queue", "_other").gauge();

    m.record(
        QueueStateSnapshot.builder()
            .queue("emails", 1, 0, 9, 0, 0)
            .queue("orders", 30, 3, 2, 1, 8)
            .collectionDuration(Duration.ofMillis(70))
            .build());

    assertThat(registry.get(Names.QUEUE_MESSAGES_READY).tag("queue", "orders").gauge())
        .isSameAs(orders);
    assertThat(orders.value()).isEqualTo(30.0);
    assertThat(other.value()).isEqualTo(9.0);
    assertThat(series(Names.QUEUE_OLDEST_READY_AGE)).containsEntry("orders", 8.0);
    assertThat(status(Names.QUEUE_STATE_COLLECTION_DURATION)).isEqualTo(0.07);
    assertThat(registry.getMeters()).hasSize(14);
  }

  @Test
  void anInvalidSnapshotIsRejectedAndThePreviousValuesStay() {
    QueueStateMetrics m = bound();
    on(m).onAcquired(term(1, "a"));
    m.record(twoQueues());

    assertThatThrownBy(
            () ->
                m.record(
                    QueueStateSnapshot.builder()
                        .queue("orders", 1, 1, 1, 1, 1)
                        .queue("_other", 1, 1, 1, 1, 1)
                        .build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "queue name \"_other\" is reserved for the overflow series, but the snapshot has a"
                + " queue of that name");
    assertThatThrownBy(
            () ->
                m.record(
                    QueueStateSnapshot.builder()
                        .queue("orders", 1, 1, 1, 1, 1)
                        .queue("orders", 2, 2, 2, 2, 2)
                        .build()))
        .isInstanceOf(IllegalArgumentException.class);

    assertThat(series(Names.QUEUE_MESSAGES_READY)).containsOnlyKeys("orders", "emails");
    assertThat(ready("orders")).isEqualTo(12.0);
    assertThat(status(Names.QUEUE_STATE_COLLECTION_SUCCESS)).isEqualTo(1.0);
  }

  @Test
  void tenThousandQueuesWithABudgetOfOneHundredGiveOneHundredSeriesAndOneOverflow() {
    QueueStateMetrics m = bound(registry, 100);
    on(m).onAcquired(term(1, "a"));
    List<QueueState> queues = randomQueues(10_000, 7);

    assertThat(m.record(QueueStateSnapshot.of(queues, Duration.ofMillis(250)))).isTrue();

    List<QueueState> byBacklog = new ArrayList<>(queues);
    byBacklog.sort(
        Comparator.comparingLong(QueueStateMetricsTest::total)
            .reversed()
            .thenComparing(QueueState::name));
    List<QueueState> kept = byBacklog.subList(0, 100);
    List<QueueState> folded = byBacklog.subList(100, byBacklog.size());
    for (String name : QUEUE_METERS) {
      Map<String, Double> series = series(name);
      assertThat(series).as(name).hasSize(101).containsKey("_other");
      assertThat(series.keySet())
          .as(name)
          .containsAll(kept.stream().map(QueueState::name).collect(Collectors.toList()));
    }
    Map<String, Double> ready = series(Names.QUEUE_MESSAGES_READY);
    for (QueueState q : kept) {
      assertThat(ready.get(q.name())).isEqualTo((double) q.ready());
    }
    assertThat(ready.get("_other")).isEqualTo((double) sum(folded, QueueState::ready));
    assertThat(series(Names.QUEUE_MESSAGES_IN_FLIGHT).get("_other"))
        .isEqualTo((double) sum(folded, QueueState::inFlight));
    assertThat(series(Names.QUEUE_MESSAGES_SCHEDULED).get("_other"))
        .isEqualTo((double) sum(folded, QueueState::scheduled));
    assertThat(series(Names.QUEUE_MESSAGES_DEAD).get("_other"))
        .isEqualTo((double) sum(folded, QueueState::dead));
    assertThat(series(Names.QUEUE_OLDEST_READY_AGE).get("_other"))
        .isEqualTo(
            folded.stream().mapToDouble(QueueState::oldestReadyAgeSeconds).max().orElseThrow());
    assertThat(status(Names.QUEUE_STATE_FOLDED)).isEqualTo(9_900.0);
    // The budget holds in the Prometheus scrape too.
    PrometheusMeterRegistry prometheus = TestTerms.prometheus();
    QueueStateMetrics p = bound(prometheus, 100);
    on(p).onAcquired(term(1, "a"));
    p.record(QueueStateSnapshot.of(queues, Duration.ZERO));
    assertThat(samples(prometheus, "queue_messages_ready{")).hasSize(101);
  }

  @Test
  void foldingDependsOnBacklogAndNameNotOnSnapshotOrder() {
    // Equal backlogs everywhere: only the name breaks ties.
    List<QueueState> queues = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      queues.add(new QueueState(String.format("q%02d", i), 1, 1, 0, 0, 0));
    }
    queues.add(new QueueState("zz-big", 100, 0, 0, 0, 0));
    List<QueueState> shuffled = new ArrayList<>(queues);
    Collections.shuffle(shuffled, new Random(1));

    QueueStateMetrics m = bound(registry, 3);
    on(m).onAcquired(term(1, "a"));
    m.record(QueueStateSnapshot.of(shuffled, Duration.ZERO));

    assertThat(series(Names.QUEUE_MESSAGES_READY))
        .containsOnlyKeys("zz-big", "q00", "q01", "_other")
        .containsEntry("_other", 48.0);
    assertThat(status(Names.QUEUE_STATE_FOLDED)).isEqualTo(48.0);
  }

  @Test
  void withinTheBudgetThereIsNoOverflowSeries() {
    QueueStateMetrics m = bound(registry, 2);
    on(m).onAcquired(term(1, "a"));
    m.record(twoQueues());
    assertThat(series(Names.QUEUE_MESSAGES_READY)).containsOnlyKeys("orders", "emails");
    assertThat(status(Names.QUEUE_STATE_FOLDED)).isZero();

    m.record(
        QueueStateSnapshot.builder()
            .queue("orders", 12, 3, 2, 1, 4.5)
            .queue("emails", 0, 0, 7, 0, 0)
            .queue("sms", 1, 0, 0, 0, 9)
            .build());
    assertThat(series(Names.QUEUE_MESSAGES_READY))
        .containsOnlyKeys("orders", "emails", "_other")
        .containsEntry("_other", 1.0);
    assertThat(series(Names.QUEUE_OLDEST_READY_AGE)).containsEntry("_other", 9.0);

    m.record(twoQueues());
    assertThat(series(Names.QUEUE_MESSAGES_READY)).containsOnlyKeys("orders", "emails");
  }

  @Test
  void aBudgetOfZeroFoldsEveryQueue() {
    QueueStateMetrics m = bound(registry, 0);
    on(m).onAcquired(term(1, "a"));
    m.record(twoQueues());

    assertThat(series(Names.QUEUE_MESSAGES_READY)).containsOnly(Map.entry("_other", 12.0));
    assertThat(series(Names.QUEUE_MESSAGES_SCHEDULED)).containsOnly(Map.entry("_other", 9.0));
    assertThat(status(Names.QUEUE_STATE_FOLDED)).isEqualTo(2.0);
  }

  @Test
  void gaugesStillReportAfterGarbageCollection() {
    recordAndForget(registry);

    System.gc();

    assertThat(ready("orders")).isEqualTo(12.0);
    assertThat(registry.get(Names.QUEUE_MESSAGES_READY).tag("queue", "_other").gauge().value())
        .isEqualTo(0.0);
    assertThat(status(Names.QUEUE_STATE_COLLECTION_SUCCESS)).isEqualTo(1.0);
    assertThat(status(Names.QUEUE_STATE_COLLECTION_DURATION)).isEqualTo(0.04);
  }

  /** Leaves the metrics and the snapshot reachable only through the registry's gauges. */
  private static void recordAndForget(MeterRegistry registry) {
    QueueStateMetrics m = QueueStateMetrics.builder(idleLoop("a")).maxQueueSeries(1).build();
    m.bindTo(registry);
    on(m).onAcquired(term(1, "a"));
    m.record(twoQueues());
  }

  @Test
  void closeRemovesExactlyTheGaugesItRegistered() {
    registry.counter("unrelated.counter");
    LeaderMetrics leader = LeaderMetrics.of(idleLoop("a"));
    leader.bindTo(registry);
    List<Meter.Id> before = ids(registry);
    QueueStateMetrics m = bound();
    on(m).onAcquired(term(1, "a"));
    m.record(twoQueues());
    assertThat(registry.getMeters()).hasSize(before.size() + 14);

    m.close();
    m.close();

    assertThat(ids(registry)).containsExactlyInAnyOrderElementsOf(before);
    assertThat(m.record(twoQueues())).isFalse();
    on(m).onAcquired(term(2, "a"));
    assertThat(m.record(twoQueues())).isFalse();
    assertThat(ids(registry)).containsExactlyInAnyOrderElementsOf(before);
  }

  @Test
  void extraTagsGoOnEveryQueueMeter() {
    QueueStateMetrics m =
        QueueStateMetrics.builder(idleLoop("a")).tags(Tags.of("service", "billing")).build();
    m.bindTo(registry);
    on(m).onAcquired(term(1, "a"));
    m.record(twoQueues());

    assertThat(registry.getMeters())
        .hasSize(14)
        .allSatisfy(meter -> assertThat(meter.getId().getTag("service")).isEqualTo("billing"));
  }

  @Test
  void misuseIsRefusedWithAClearMessage() {
    assertThatThrownBy(() -> QueueStateMetrics.builder(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessage("loop");
    assertThatThrownBy(() -> QueueStateMetrics.of(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessage("loop");
    assertThatThrownBy(() -> QueueStateMetrics.builder(idleLoop("a")).maxQueueSeries(-1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("maxQueueSeries must not be negative, but was -1");
    assertThatThrownBy(() -> QueueStateMetrics.builder(idleLoop("a")).tags(Tags.of("queue", "x")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("tags must not use the key queue, which QueueStateMetrics sets itself");
    QueueStateMetrics unbound = QueueStateMetrics.of(idleLoop("a"));
    on(unbound).onAcquired(term(1, "a"));
    assertThatThrownBy(() -> unbound.record(twoQueues()))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("call bindTo(registry) before record(snapshot)");
    QueueStateMetrics m = bound();
    assertThatThrownBy(() -> m.bindTo(new SimpleMeterRegistry()))
        .isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> m.record(null)).isInstanceOf(NullPointerException.class);
    assertThat(QueueStateMetrics.of(idleLoop("a")).maxQueueSeries()).isEqualTo(100);
  }

  @Test
  void bindToSubscribesToTheLoopOnceAndCloseUnsubscribes() {
    LeaderLoop loop = idleLoop("a");
    QueueStateMetrics m = QueueStateMetrics.of(loop);
    assertThat(m.loop()).isSameAs(loop);
    assertThat(loop.removeListener(on(m))).as("subscribed before bindTo").isFalse();

    m.bindTo(registry);
    assertThat(loop.removeListener(on(m))).as("subscribed by bindTo").isTrue();
    assertThat(loop.removeListener(on(m))).as("subscribed twice").isFalse();
    loop.addListener(on(m));

    m.close();
    assertThat(loop.removeListener(on(m))).as("subscribed after close").isFalse();
    assertThat(LeaderListener.class.isAssignableFrom(QueueStateMetrics.class)).isFalse();
  }

  @Test
  void theSameTermAnnouncedAfterTheBindCaughtUpWithItKeepsTheGauges() {
    QueueStateMetrics m = bound();
    Term term = term(1, "a");
    on(m).onAcquired(term);
    m.record(twoQueues());

    on(m).onAcquired(term);

    assertThat(m.isExporting()).isTrue();
    assertThat(registry.getMeters()).hasSize(14);
    on(m).onAcquired(term(2, "a"));
    assertThat(m.isExporting()).as("a new term starts without gauges").isFalse();
  }

  @Test
  void aRegistryThatRefusesMetersNeverBreaksTheLoopNorLeavesGaugesBehind() {
    registry
        .config()
        .meterFilter(
            new MeterFilter() {
              @Override
              public Meter.Id map(Meter.Id id) {
                if (id.getName().equals(Names.QUEUE_MESSAGES_DEAD)) {
                  throw new IllegalStateException("refused by a broken filter");
                }
                return id;
              }
            });
    QueueStateMetrics m = bound();
    Term term = term(1, "a");

    assertThatCode(
            () -> {
              on(m).onAcquired(term);
              assertThat(m.record(twoQueues())).isFalse();
              on(m).onRefreshFailed(term, Duration.ZERO, new IllegalStateException("x"));
              on(m).onLost(term, LossReason.REFRESH_FAILED, null);
            })
        .doesNotThrowAnyException();
    assertThat(registry.getMeters()).isEmpty();
    assertThat(m.isExporting()).isFalse();
  }

  @Test
  void aTermEndingOnAnotherThreadWhileRecordingNeverLeavesGaugesBehind() throws Exception {
    QueueStateMetrics m = bound();
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      for (int round = 1; round <= 200; round++) {
        Term term = term(round, "a");
        on(m).onAcquired(term);
        CountDownLatch started = new CountDownLatch(1);
        AtomicBoolean stop = new AtomicBoolean();
        Future<?> recorder =
            pool.submit(
                () -> {
                  started.countDown();
                  while (!stop.get()) {
                    m.record(twoQueues());
                  }
                });
        started.await();
        // The watchdog ends the term while the refresh keeps recording.
        pool.submit(() -> on(m).onLost(term, LossReason.SELF_FENCED, null))
            .get(10, TimeUnit.SECONDS);
        assertThat(registry.getMeters()).as("round %d, recorder still running", round).isEmpty();
        stop.set(true);
        recorder.get(10, TimeUnit.SECONDS);
        assertThat(registry.getMeters()).as("round %d", round).isEmpty();
      }
    } finally {
      pool.shutdownNow();
    }
  }

  static List<QueueState> randomQueues(int n, long seed) {
    Random random = new Random(seed);
    List<QueueState> queues = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      queues.add(
          new QueueState(
              "queue-" + i,
              random.nextInt(1_000),
              random.nextInt(100),
              random.nextInt(50),
              random.nextInt(10),
              random.nextInt(3_600_000) / 1000.0));
    }
    return queues;
  }

  private static long total(QueueState q) {
    return q.ready() + q.inFlight() + q.scheduled() + q.dead();
  }

  private static long sum(
      Collection<QueueState> queues, java.util.function.ToLongFunction<QueueState> f) {
    return queues.stream().mapToLong(f).sum();
  }

  private static List<Meter.Id> ids(MeterRegistry registry) {
    return registry.getMeters().stream().map(Meter::getId).collect(Collectors.toList());
  }
}
