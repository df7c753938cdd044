package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.fakes.FakeTime;
import dev.retsu.lock.fakes.RecordingListener;
import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.internal.session.KeySql;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The loop's timing, with simulated time: the injected ticker and sleeper make every wait instant
 * and exact, while every lock operation still runs on a real PostgreSQL.
 */
@ExtendWith(PostgresExtension.class)
class LeaderLoopFakeTimeIntegrationTest {

  private static final Duration WITHIN = Duration.ofSeconds(20);

  private static LeaderLoopBuilder simulated(TestDatabase db, LockKey key, FakeTime time) {
    return LeaderLoop.builder(db.dataSource(), key)
        .candidateId("sim")
        .failurePolicy(FailurePolicy.EXIT)
        .timeSource(time);
  }

  @Test
  void refreshesAtOnceOnAcquisitionThenEveryRefreshIntervalWithHeartbeatsBetween(TestDatabase db)
      throws Exception {
    FakeTime time = new FakeTime();
    List<Long> refreshTimes = new CopyOnWriteArrayList<>();
    List<Integer> sleepsBeforeRefresh = new CopyOnWriteArrayList<>();
    LeaderLoop[] self = new LeaderLoop[1];
    self[0] = simulated(db, TestKeys.next(), time).build();
    self[0].run(
        ctx -> {
          refreshTimes.add(time.nanoTime());
          sleepsBeforeRefresh.add(time.sleeps.size());
          if (refreshTimes.size() == 4) {
            self[0].close();
          }
        });

    assertThat(sleepsBeforeRefresh.get(0)).as("no wait before the first refresh").isZero();
    for (int i = 1; i < refreshTimes.size(); i++) {
      assertThat(Duration.ofNanos(refreshTimes.get(i) - refreshTimes.get(i - 1)))
          .isEqualTo(LeaderLoopBuilder.DEFAULT_REFRESH_INTERVAL);
    }
    // Between refreshes the leader never waits longer than one heartbeat interval.
    assertThat(time.sleeps)
        .isNotEmpty()
        .allSatisfy(
            d -> assertThat(d).isLessThanOrEqualTo(FailoverTiming.DEFAULT.heartbeatInterval()));
  }

  @Test
  void standbyRetriesEveryRetryIntervalWithJitterAndTakesOverWhenFree(TestDatabase db)
      throws Exception {
    LockKey key = TestKeys.next();
    AdvisoryLockLease holder = AdvisoryLock.of(db.dataSource(), key).tryAcquire().orElseThrow();
    FakeTime time = new FakeTime();
    RecordingListener l = new RecordingListener();
    LeaderLoop loop = simulated(db, key, time).listener(l).build();
    CompletableFuture<Void> run = loop.start(ctx -> {});
    await().atMost(WITHIN).until(() -> time.sleeps.size() >= 20);
    holder.close();
    await().atMost(WITHIN).until(loop::isLeader);
    loop.close();
    run.get(10, TimeUnit.SECONDS);

    List<Duration> standbyWaits = time.sleeps.subList(0, 20);
    assertThat(standbyWaits)
        .allSatisfy(
            d -> assertThat(d).isBetween(Duration.ofMillis(13_500), Duration.ofMillis(16_500)));
    assertThat(standbyWaits.stream().distinct().count()).as("jittered").isGreaterThan(1);
    assertThat(l.of("attempt").get(0).detail()).isEqualTo(AttemptResult.HELD_ELSEWHERE);
  }

  @Test
  void ensureLeaderSelfFencesOncePastTheDeadline(TestDatabase db) {
    FakeTime time = new FakeTime();
    RecordingListener l = new RecordingListener();
    LockKey key = TestKeys.next();
    LeaderLoop loop = simulated(db, key, time).listener(l).build();
    List<Boolean> before = new CopyOnWriteArrayList<>();

    assertThatThrownBy(
            () ->
                loop.run(
                    ctx -> {
                      before.add(ctx.isLeader());
                      time.advance(FailoverTiming.DEFAULT.selfFenceAfter()); // a long pause
                      before.add(ctx.isLeader());
                      ctx.ensureLeader(); // throws: no side effect after the deadline
                      before.add(true);
                    }))
        .isInstanceOfSatisfying(
            LeadershipLostException.class,
            e -> assertThat(e.reason()).isEqualTo(LossReason.SELF_FENCED));
    assertThat(before).containsExactly(true, false);
    assertThat(l.lossReasons()).containsExactly(LossReason.SELF_FENCED);
    // The session ends as soon as the server reads the Terminate message: a moment later.
    await()
        .atMost(WITHIN)
        .untilAsserted(
            () -> assertThat(AdvisoryLock.of(db.dataSource(), key).currentHolder()).isEmpty());
  }

  @Test
  void aSuspendTheMonotonicClockDoesNotSeeStillFences(TestDatabase db) {
    FakeTime time = new FakeTime();
    RecordingListener l = new RecordingListener();
    LeaderLoop loop = simulated(db, TestKeys.next(), time).listener(l).build();
    List<Boolean> before = new CopyOnWriteArrayList<>();
    assertThatThrownBy(
            () ->
                loop.run(
                    ctx -> {
                      before.add(ctx.isLeader());
                      // System suspend: the wall clock moves on, the monotonic clock does not.
                      time.suspend(FailoverTiming.DEFAULT.selfFenceAfter());
                      before.add(ctx.isLeader());
                      ctx.ensureLeader();
                      before.add(true);
                    }))
        .isInstanceOfSatisfying(
            LeadershipLostException.class,
            e -> assertThat(e.reason()).isEqualTo(LossReason.SELF_FENCED));
    assertThat(before).containsExactly(true, false);
    assertThat(l.lossReasons()).containsExactly(LossReason.SELF_FENCED);
  }

  @Test
  void watchdogFencesAStuckTaskBeforeReleasingTheLock(TestDatabase db) throws Exception {
    FakeTime time = new FakeTime();
    LockKey key = TestKeys.next();
    List<Integer> locksHeldWhenTold = new CopyOnWriteArrayList<>();
    List<String> toldOn = new CopyOnWriteArrayList<>();
    LeaderListener probe =
        new LeaderListener() {
          @Override
          public void onLost(Term term, LossReason reason, Throwable cause) {
            toldOn.add(reason + "@" + Thread.currentThread().getName());
            try {
              locksHeldWhenTold.add(db.advisoryLocksHeldBy(term.backendPid()));
            } catch (java.sql.SQLException e) {
              throw new IllegalStateException(e);
            }
          }
        };
    CountDownLatch never = new CountDownLatch(1);
    AtomicInteger interrupted = new AtomicInteger();
    LeaderLoop loop =
        simulated(db, key, time).failurePolicy(FailurePolicy.STEP_DOWN).listener(probe).build();
    CompletableFuture<Void> run =
        loop.start(
            ctx -> {
              if (!toldOn.isEmpty()) {
                return; // later terms: do nothing
              }
              time.advance(FailoverTiming.DEFAULT.selfFenceAfter().plusMillis(1));
              try {
                never.await(); // stuck, e.g. in a call that does not check the context
              } catch (InterruptedException e) {
                interrupted.incrementAndGet();
                throw e;
              }
            });

    await().atMost(WITHIN).until(() -> !locksHeldWhenTold.isEmpty());
    assertThat(toldOn.get(0)).startsWith("SELF_FENCED@retsu-lock-watchdog-sim");
    assertThat(locksHeldWhenTold.get(0)).as("told while the lock was still held").isEqualTo(1);
    await().atMost(WITHIN).until(() -> interrupted.get() == 1);
    // STEP_DOWN: the loop contends again by itself and leads a new term.
    await().atMost(WITHIN).until(() -> loop.currentTerm().map(Term::number).orElse(0L) >= 2);
    loop.close();
    run.get(10, TimeUnit.SECONDS);
  }

  @Test
  void stepDownBackoffDoublesUpToTheMaximum(TestDatabase db) {
    LockKey key = TestKeys.next();
    FakeTime time =
        new FakeTime() {
          @Override
          public void onWait(Duration d) {
            // The simulated backoff passes at once, but the server frees the ended session's lock
            // in real time: wait for that, as the backoff's real seconds would have. Otherwise the
            // next attempt may find the dying backend still holding it (HELD_ELSEWHERE, a jittered
            // wait), a race this test is not about. (Only the loop's own waits: the watchdog's
            // run while the lock is held.)
            if (Thread.currentThread().getName().contains("watchdog")) {
              return;
            }
            await()
                .atMost(WITHIN)
                .until(
                    () ->
                        db.queryInts(
                                "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted"
                                    + " AND "
                                    + KeySql.pgLocksPredicate(key, "pg_locks"),
                                TestKeys.lockArguments(key))
                            .isEmpty());
          }
        };
    RecordingListener l = new RecordingListener();
    LeaderLoop loop =
        simulated(db, key, time)
            .failurePolicy(FailurePolicy.STEP_DOWN)
            .retryInterval(Duration.ofSeconds(15))
            .maxBackoff(Duration.ofSeconds(60))
            .listener(l)
            .build();
    loop.start(
        ctx -> {
          throw new IllegalStateException("always fails");
        });
    await().atMost(WITHIN).until(() -> time.sleeps.size() >= 5);
    loop.close();
    assertThat(time.sleeps.subList(0, 5))
        .containsExactly(
            Duration.ofSeconds(15),
            Duration.ofSeconds(30),
            Duration.ofSeconds(60),
            Duration.ofSeconds(60),
            Duration.ofSeconds(60));
  }
}
