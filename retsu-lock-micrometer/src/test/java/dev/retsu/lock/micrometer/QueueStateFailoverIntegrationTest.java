package dev.retsu.lock.micrometer;

import static dev.retsu.lock.micrometer.TestTerms.samples;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.FailoverTiming;
import dev.retsu.lock.FailurePolicy;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LeadershipLostException;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Invariant 7 on a real PostgreSQL: two replicas, each with its own registry, run real leader loops
 * on one lock. Only the leader's scrape has queue-state series; after a failover the old leader's
 * has none and the new leader's has them.
 */
@ExtendWith(PostgresExtension.class)
class QueueStateFailoverIntegrationTest {

  private static final Duration WITHIN = Duration.ofSeconds(30);
  private static final AtomicInteger KEYS = new AtomicInteger(7000);

  private final List<AutoCloseable> closeables = new ArrayList<>();

  @BeforeAll
  static void queueStateTable(TestDatabase db) throws SQLException {
    db.execute(
        "CREATE TABLE queue_state (name text PRIMARY KEY, ready bigint, in_flight bigint,"
            + " scheduled bigint, dead bigint, oldest_ready_age_seconds double precision);"
            + " INSERT INTO queue_state VALUES ('orders', 12, 3, 2, 1, 4.5), ('emails', 0, 0, 7, 0,"
            + " 0)");
  }

  @AfterEach
  void closeAll() throws Exception {
    for (int i = closeables.size() - 1; i >= 0; i--) {
      closeables.get(i).close();
    }
  }

  /** One replica: its own registry, loop and metrics, as a separate process would have. */
  private final class Replica {
    final String id;
    final PrometheusMeterRegistry registry = TestTerms.prometheus();
    final LeaderLoop loop;
    final LeaderMetrics leaderMetrics;
    final QueueStateMetrics queueMetrics;
    CompletableFuture<Void> run;

    Replica(TestDatabase db, LockKey key, String id) {
      this(db, key, id, FailurePolicy.EXIT, LeaderListener.NO_OP);
    }

    /** {@code after} is subscribed after the metrics, so the loop calls it after them. */
    Replica(TestDatabase db, LockKey key, String id, FailurePolicy policy, LeaderListener after) {
      this.id = id;
      loop =
          LeaderLoop.builder(db.dataSource(), key)
              .candidateId(id)
              .retryInterval(Duration.ofMillis(100))
              .refreshInterval(Duration.ofMillis(200))
              .timing(FailoverTiming.DEFAULT.withHeartbeatInterval(Duration.ofMillis(100)))
              .failurePolicy(policy)
              .build();
      leaderMetrics = LeaderMetrics.builder(loop).lockName("queue-state").build();
      queueMetrics = QueueStateMetrics.of(loop);
      leaderMetrics.bindTo(registry);
      queueMetrics.bindTo(registry);
      loop.addListener(after);
      closeables.add(loop);
      closeables.add(queueMetrics);
      closeables.add(leaderMetrics);
    }

    Replica start() {
      run =
          loop.start(
              ctx ->
                  queueMetrics.record(
                      ctx.withConnection(
                          ReadmeSnippetsIntegrationTest.QueueStateCollector::collect)));
      return this;
    }

    double attemptsHeldElsewhere() {
      return registry.get(Names.ATTEMPTS).tag("result", "held_elsewhere").counter().count();
    }

    List<String> queueSeries() {
      return samples(registry, "queue_");
    }

    String scrape() {
      return registry.scrape();
    }

    String leaderLine(String state, String value) {
      return "retsu_lock_leader{candidate=\""
          + id
          + "\",lock=\"queue-state\",state=\""
          + state
          + "\"} "
          + value;
    }
  }

  /**
   * Watches two replicas and remembers whether both ever exported at once. A's exporting is one
   * interval (it leads once), so seeing it before and after B is proof of an overlap.
   */
  private static final class OverlapWatch implements AutoCloseable {
    final AtomicBoolean overlap = new AtomicBoolean();
    final AtomicBoolean stop = new AtomicBoolean();
    final Thread thread;

    OverlapWatch(Replica a, Replica b) {
      thread =
          new Thread(
              () -> {
                while (!stop.get()) {
                  boolean before = a.queueMetrics.isExporting();
                  boolean other = b.queueMetrics.isExporting();
                  boolean after = a.queueMetrics.isExporting();
                  if (before && other && after) {
                    overlap.set(true);
                  }
                  // Sample every 0.1 ms without spinning a core of the shared machine.
                  LockSupport.parkNanos(100_000);
                }
              },
              "overlap-watch");
      thread.setDaemon(true);
      thread.start();
    }

    @Override
    public void close() {
      stop.set(true);
      try {
        thread.join(10_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  @Test
  void onlyTheLeaderExportsQueueStateAndASessionKillMovesItToTheStandby(TestDatabase db)
      throws Exception {
    LockKey key = LockKey.of(KEYS.incrementAndGet());
    Replica a = new Replica(db, key, "a").start();
    await().atMost(WITHIN).until(() -> !a.queueSeries().isEmpty());
    Replica b = new Replica(db, key, "b");
    OverlapWatch watch = new OverlapWatch(a, b);
    closeables.add(watch);
    b.start();

    // The standby tries, fails, and exports leadership metrics but no queue series.
    await().atMost(WITHIN).until(() -> b.attemptsHeldElsewhere() >= 2);
    assertThat(b.queueSeries()).isEmpty();
    assertThat(b.scrape()).contains(b.leaderLine("standby", "1.0"));
    assertThat(a.scrape()).contains(a.leaderLine("leader", "1.0"));
    assertThat(a.queueSeries())
        .contains(
            "queue_messages_ready{queue=\"orders\"} 12.0",
            "queue_messages_scheduled{queue=\"emails\"} 7.0",
            "queue_state_collection_success 1.0");

    // An operator kills the leader's session; A's loop exits (policy EXIT), B takes over.
    int pid = a.loop.currentTerm().orElseThrow().backendPid();
    assertThat(db.terminateBackend(pid)).isTrue();

    ExecutionException exit =
        org.junit.jupiter.api.Assertions.assertThrows(
            ExecutionException.class, () -> a.run.get(WITHIN.toSeconds(), TimeUnit.SECONDS));
    assertThat(exit.getCause()).isInstanceOf(LeadershipLostException.class);
    LossReason reason = ((LeadershipLostException) exit.getCause()).reason();
    assertThat(a.queueSeries()).isEmpty();
    assertThat(a.loop.state()).isEqualTo(LeaderLoop.State.FAILED);
    assertThat(a.scrape())
        .contains(a.leaderLine("leader", "0.0"))
        .contains(a.leaderLine("standby", "0.0"))
        .contains(
            "retsu_lock_lost_terms_total{candidate=\"a\",lock=\"queue-state\",reason=\""
                + reason.name().toLowerCase(java.util.Locale.ROOT)
                + "\"} 1.0");
    await().atMost(WITHIN).until(() -> !b.queueSeries().isEmpty());
    assertThat(b.queueSeries())
        .contains(
            "queue_messages_ready{queue=\"orders\"} 12.0", "queue_state_collection_success 1.0");
    assertThat(b.scrape()).contains(b.leaderLine("leader", "1.0"));
    assertThat(a.queueSeries()).isEmpty();

    watch.close();
    assertThat(watch.overlap).as("both replicas exported queue state at once").isFalse();
  }

  @Test
  void aGracefulCloseRemovesTheGaugesBeforeTheStandbyTakesOver(TestDatabase db) throws Exception {
    LockKey key = LockKey.of(KEYS.incrementAndGet());
    Replica a = new Replica(db, key, "a").start();
    await().atMost(WITHIN).until(() -> !a.queueSeries().isEmpty());
    Replica b = new Replica(db, key, "b");
    OverlapWatch watch = new OverlapWatch(a, b);
    closeables.add(watch);
    b.start();
    await().atMost(WITHIN).until(() -> b.attemptsHeldElsewhere() >= 1);
    assertThat(b.queueSeries()).isEmpty();

    a.loop.close();

    a.run.get(WITHIN.toSeconds(), TimeUnit.SECONDS);
    assertThat(a.queueSeries()).isEmpty();
    assertThat(a.scrape())
        .contains(
            "retsu_lock_lost_terms_total{candidate=\"a\",lock=\"queue-state\","
                + "reason=\"closed\"} 1.0");
    await().atMost(WITHIN).until(() -> !b.queueSeries().isEmpty());
    assertThat(b.queueMetrics.isExporting()).isTrue();
    assertThat(b.leaderMetrics.isLeader()).isTrue();
    watch.close();
    assertThat(watch.overlap).as("both replicas exported queue state at once").isFalse();
  }

  @Test
  void aFailedRefreshEndsTheTermAndTakesTheGaugesWithIt(TestDatabase db) throws Exception {
    LockKey key = LockKey.of(KEYS.incrementAndGet());
    Replica a = new Replica(db, key, "a");
    AtomicInteger refreshes = new AtomicInteger();
    a.run =
        a.loop.start(
            ctx -> {
              if (refreshes.incrementAndGet() == 3) {
                throw new IllegalStateException("state query failed");
              }
              a.queueMetrics.record(
                  ctx.withConnection(ReadmeSnippetsIntegrationTest.QueueStateCollector::collect));
            });

    ExecutionException exit =
        org.junit.jupiter.api.Assertions.assertThrows(
            ExecutionException.class, () -> a.run.get(WITHIN.toSeconds(), TimeUnit.SECONDS));

    assertThat(exit.getCause())
        .isInstanceOfSatisfying(
            LeadershipLostException.class,
            e -> assertThat(e.reason()).isEqualTo(LossReason.REFRESH_FAILED));
    assertThat(a.queueSeries()).isEmpty();
    assertThat(a.scrape())
        .contains(
            "retsu_lock_refresh_seconds_count{candidate=\"a\",lock=\"queue-state\","
                + "outcome=\"failure\"} 1")
        .contains(
            "retsu_lock_refresh_seconds_count{candidate=\"a\",lock=\"queue-state\","
                + "outcome=\"success\"} 2");
  }

  @Test
  void aLeaderThatStepsDownAndLeadsAgainExportsOnlyDuringItsTerms(TestDatabase db)
      throws Exception {
    LockKey key = LockKey.of(KEYS.incrementAndGet());
    // What the scrape held at each event, seen by a listener called after the metrics.
    List<String> seen = new CopyOnWriteArrayList<>();
    Replica[] self = new Replica[1];
    LeaderListener probe =
        new LeaderListener() {
          @Override
          public void onAcquired(Term term) {
            seen.add("acquired " + term.number() + ": " + self[0].queueSeries().size());
          }

          @Override
          public void onLost(Term term, LossReason reason, Throwable cause) {
            seen.add("lost " + term.number() + ": " + self[0].queueSeries().size());
          }
        };
    Replica a = new Replica(db, key, "a", FailurePolicy.STEP_DOWN, probe);
    self[0] = a;
    a.start();
    await().atMost(WITHIN).until(() -> !a.queueSeries().isEmpty());

    assertThat(db.terminateBackend(a.loop.currentTerm().orElseThrow().backendPid())).isTrue();

    // The same replica contends again, wins (nobody else is there) and exports again.
    await().atMost(WITHIN).until(() -> a.loop.currentTerm().map(Term::number).orElse(0L) >= 2);
    await().atMost(WITHIN).until(() -> !a.queueSeries().isEmpty());
    assertThat(seen.subList(0, 3)).containsExactly("acquired 1: 0", "lost 1: 0", "acquired 2: 0");
    assertThat(a.scrape())
        .contains("retsu_lock_acquisitions_total{candidate=\"a\",lock=\"queue-state\"} 2.0");
  }

  @Test
  void bindingWhileTheLoopLeadsExportsOnTheNextRecord(TestDatabase db) throws Exception {
    LeaderLoop loop =
        LeaderLoop.builder(db.dataSource(), LockKey.of(KEYS.incrementAndGet()))
            .candidateId("a")
            .retryInterval(Duration.ofMillis(100))
            .refreshInterval(Duration.ofMillis(200))
            .build();
    closeables.add(loop);
    loop.start(ctx -> {});
    await().atMost(WITHIN).until(loop::isLeader);
    PrometheusMeterRegistry registry = TestTerms.prometheus();
    QueueStateMetrics queueMetrics = QueueStateMetrics.of(loop);
    closeables.add(queueMetrics);

    queueMetrics.bindTo(registry);

    assertThat(samples(registry, "queue_")).isEmpty();
    assertThat(
            queueMetrics.record(
                QueueStateSnapshot.builder().queue("orders", 12, 3, 2, 1, 4.5).build()))
        .as("record in the term that ran at bind time")
        .isTrue();
    assertThat(samples(registry, "queue_")).contains("queue_messages_ready{queue=\"orders\"} 12.0");

    loop.close();

    assertThat(samples(registry, "queue_")).isEmpty();
    assertThat(
            queueMetrics.record(
                QueueStateSnapshot.builder().queue("orders", 1, 0, 0, 0, 0).build()))
        .isFalse();
    assertThat(registry.getMeters()).isEmpty();
  }

  @Test
  void closeUnsubscribesSoNoGaugeReappearsInLaterTerms(TestDatabase db) throws Exception {
    LockKey key = LockKey.of(KEYS.incrementAndGet());
    Replica a = new Replica(db, key, "a", FailurePolicy.STEP_DOWN, LeaderListener.NO_OP);
    AtomicInteger refused = new AtomicInteger();
    a.run =
        a.loop.start(
            ctx -> {
              if (!a.queueMetrics.record(
                  ctx.withConnection(ReadmeSnippetsIntegrationTest.QueueStateCollector::collect))) {
                refused.incrementAndGet();
              }
            });
    await().atMost(WITHIN).until(() -> !a.queueSeries().isEmpty());

    a.queueMetrics.close();

    assertThat(a.queueSeries()).isEmpty();
    assertThat(a.loop.removeListener(a.queueMetrics.listenerForTests()))
        .as("still subscribed")
        .isFalse();
    // The loop loses its term and leads again; its task records, and nothing comes back.
    assertThat(db.terminateBackend(a.loop.currentTerm().orElseThrow().backendPid())).isTrue();
    await().atMost(WITHIN).until(() -> a.loop.currentTerm().map(Term::number).orElse(0L) >= 2);
    int before = refused.get();
    await().atMost(WITHIN).until(() -> refused.get() >= before + 2);
    assertThat(a.queueSeries()).isEmpty();
    assertThat(a.queueMetrics.isExporting()).isFalse();
    assertThat(a.scrape()).contains(a.leaderLine("leader", "1.0"));
  }
}
