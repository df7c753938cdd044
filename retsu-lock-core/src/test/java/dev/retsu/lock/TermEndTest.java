package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

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
 * How a term ends, without a database: once, and in order (invalid, the running refresh
 * interrupted, awaited, then {@code onLost}, then the lock released), and what listeners hear
 * ({@code onLost} only after {@code onAcquired}, nothing after {@code onLost}). On stub leases and
 * simulated time; the task, the listeners and the stub write to one log.
 */
class TermEndTest {

  private static final Duration WITHIN = Duration.ofSeconds(10);

  private final FakeTime time = new FakeTime();
  private final List<String> log = new CopyOnWriteArrayList<>();
  private final RecordingListener heard = new RecordingListener();

  /** Logs {@code onLost} and whether the lease was still open when it was heard. */
  private LeaderListener logsOnLost(StubTermLease lease) {
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
    StubTermLease lease = new StubTermLease(log, 7);
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
            "released");
    assertThat(heard.kinds()).containsExactly("attempt", "acquired", "lost");
  }

  @Test
  void aSessionLostDuringTheTaskEndsTheTermInTheSameOrderAndExitKeepsTheSqlState()
      throws Exception {
    StubTermLease lease = new StubTermLease(log, 7);
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

  @Test
  void aTermNobodyWasToldOfEndsSilentlyAndNothingIsHeardAfterOnLost() {
    LoopSettings settings = StubLoops.builder(time).settings();
    Listeners listeners = new Listeners(List.of(heard), settings.context());

    LeaderTerm unannounced = TermRunner.begin(new StubTermLease(log, 1), 1, settings, listeners);
    unannounced.end(LossReason.CLOSED, null);
    assertThat(heard.events).as("no onLost without onAcquired").isEmpty();
    assertThat(log).containsExactly("released");

    LeaderTerm term = TermRunner.begin(new StubTermLease(log, 2), 2, settings, listeners);
    listeners.acquired(term);
    term.end(LossReason.SESSION_LOST, null);
    term.end(LossReason.CLOSED, null); // a term ends once
    listeners.refreshed(term, Duration.ofMillis(5), null);
    listeners.refreshed(term, Duration.ofMillis(5), new IllegalStateException("late"));
    listeners.lost(term, LossReason.CLOSED, null);

    assertThat(heard.kinds()).containsExactly("acquired", "lost");
    assertThat(heard.lossReasons()).containsExactly(LossReason.SESSION_LOST);
    assertThat(log).containsExactly("released", "released");
    assertThatThrownBy(term::ensureLeader)
        .isInstanceOfSatisfying(
            LeadershipLostException.class,
            e -> assertThat(e.reason()).isEqualTo(LossReason.SESSION_LOST));
  }

  @Test
  void aListenerThatThrowsInOnLostNeitherSilencesTheOthersNorKeepsTheLock() {
    LeaderListener throwing =
        new LeaderListener() {
          @Override
          public void onLost(Term term, LossReason reason, Throwable cause) {
            throw new IllegalStateException("listener bug");
          }
        };
    LoopSettings settings = StubLoops.builder(time).settings();
    Listeners listeners = new Listeners(List.of(throwing, heard), settings.context());
    LeaderTerm term = TermRunner.begin(new StubTermLease(log, 3), 1, settings, listeners);
    listeners.acquired(term);

    term.end(LossReason.LOCK_NOT_HELD, null);

    assertThat(heard.lossReasons()).containsExactly(LossReason.LOCK_NOT_HELD);
    assertThat(log).containsExactly("released");
  }
}
