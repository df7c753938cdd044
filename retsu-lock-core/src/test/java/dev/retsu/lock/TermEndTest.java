package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.fakes.FakeTime;
import dev.retsu.lock.fakes.RecordingListener;
import dev.retsu.lock.internal.term.StubSession;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * How a loop's term ends, without a database, through the loop's facade: once, and in order
 * (invalid, the running refresh interrupted, awaited, then {@code onLost}, then the lock released),
 * with the failure policy keeping the SQLState. The same protocol for one-key and n-key sessions is
 * {@code TermProtocolTest}'s. On stub sessions and simulated time; the task, the listeners and the
 * stub write to one log.
 */
class TermEndTest {

  private static final Duration WITHIN = Duration.ofSeconds(10);

  private final FakeTime time = new FakeTime();
  private final List<String> log = new CopyOnWriteArrayList<>();
  private final RecordingListener heard = new RecordingListener();

  /** Logs {@code onLost} and whether the lease was still open when it was heard. */
  private LeaderListener logsOnLost(StubSession lease) {
    return new LeaderListener() {
      @Override
      public void onLost(Term term, LossReason reason, Throwable cause) {
        log.add("onLost " + reason + (lease.isOpen() ? ", lease open" : ", lease closed"));
      }
    };
  }

  /** A task that blocks until interrupted, then waits for {@code mayReturn} before it returns. */
  private LeaderTask blocksUntilInterrupted(CountDownLatch started, CountDownLatch mayReturn) {
    return ctx -> {
      log.add("task");
      started.countDown();
      try {
        new CountDownLatch(1).await();
      } catch (InterruptedException e) {
        log.add("interrupted, leader " + ctx.isLeader());
        mayReturn.await();
        log.add("task returns");
        throw e;
      }
    };
  }

  @Test
  void closeEndsTheTermInvalidFirstThenInterruptsAndAwaitsTheTaskThenTellsThenReleases()
      throws Exception {
    StubSession lease = StubLoops.session(StubLoops.builder(time), log, 7);
    LeaderLoop loop =
        StubLoops.loop(
            StubLoops.builder(time).listener(heard).listener(logsOnLost(lease)), log, lease);
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch mayReturn = new CountDownLatch(1);
    CompletableFuture<Void> run = loop.start(blocksUntilInterrupted(started, mayReturn));
    assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();

    Thread closer = new Thread(loop::close, "retsu-lock-test-close");
    closer.start();
    await().atMost(WITHIN).until(() -> log.contains("interrupted, leader false"));
    assertThat(log).as("nobody is told before the task returns").doesNotContain("released");
    mayReturn.countDown();
    closer.join(WITHIN.toMillis());
    run.get(10, TimeUnit.SECONDS);

    assertThat(log)
        .containsExactly(
            "task",
            "interrupted, leader false",
            "task returns",
            "onLost CLOSED, lease open",
            "notified 1 released, unlocked all",
            "released");
    assertThat(heard.kinds()).containsExactly("attempt", "acquired", "lost");
  }

  /**
   * A session already past its self-fencing deadline when its term would be announced (a WAIT grant
   * whose answer was held up on its way until the server may have ended the session, or a pause
   * after the grant): nobody hears of that term and no work runs on it; its session ends and the
   * next grant leads as usual.
   */
  @Test
  void aTermWhoseSessionIsPastItsDeadlineAtTheGrantIsNeverAnnouncedAndRunsNoWork()
      throws Exception {
    LeaderLoopBuilder b = StubLoops.builder(time);
    StubSession stale = StubLoops.session(b, log, 7);
    time.advance(b.settings().term().selfFenceAfter().plusMillis(1));
    LeaderLoop loop = StubLoops.loop(StubLoops.builder(time).listener(heard), log, stale);
    List<Integer> workedOn = new CopyOnWriteArrayList<>();
    CompletableFuture<Void> run = loop.start(ctx -> workedOn.add(ctx.term().backendPid()));
    await().atMost(WITHIN).until(() -> !workedOn.isEmpty());
    loop.close();
    run.get(10, TimeUnit.SECONDS);

    assertThat(stale.isOpen()).isFalse();
    assertThat(heard.acquired()).extracting(Term::backendPid).isNotEmpty().doesNotContain(7);
    assertThat(workedOn).doesNotContain(7);
    assertThat(heard.lossReasons()).containsExactly(LossReason.CLOSED);
  }

  @Test
  void aSessionLostDuringTheTaskEndsTheTermInTheSameOrderAndExitKeepsTheSqlState()
      throws Exception {
    StubSession lease = StubLoops.session(StubLoops.builder(time), log, 7);
    LeaderLoop loop =
        StubLoops.loop(
            StubLoops.builder(time)
                .failurePolicy(FailurePolicy.EXIT)
                .listener(heard)
                .listener(logsOnLost(lease)),
            log,
            lease);
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch mayReturn = new CountDownLatch(1);
    CompletableFuture<Void> run = loop.start(blocksUntilInterrupted(started, mayReturn));
    assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();

    lease.loseSession(new SQLException("terminating connection", "57P01"));
    await().atMost(WITHIN).until(() -> log.contains("interrupted, leader false"));
    mayReturn.countDown();

    assertThatThrownBy(() -> run.get(10, TimeUnit.SECONDS))
        .isInstanceOf(ExecutionException.class)
        .cause()
        .isInstanceOfSatisfying(
            LeadershipLostException.class,
            e -> {
              assertThat(e.reason()).isEqualTo(LossReason.SESSION_LOST);
              assertThat(e.sqlState()).contains("57P01");
            });
    assertThat(log)
        .containsExactly(
            "task",
            "interrupted, leader false",
            "task returns",
            "onLost SESSION_LOST, lease open",
            "released");
    assertThat(heard.kinds()).containsExactly("attempt", "acquired", "lost");
  }
}
