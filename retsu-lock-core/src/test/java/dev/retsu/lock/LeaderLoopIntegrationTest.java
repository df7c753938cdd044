package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.fakes.DownUntilOpened;
import dev.retsu.lock.fakes.FakeTime;
import dev.retsu.lock.fakes.RecordingListener;
import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.PostgresServer.ShutdownMode;
import dev.retsu.lock.testing.TestDatabase;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The leader loop on a real PostgreSQL, with short intervals. */
@ExtendWith(PostgresExtension.class)
class LeaderLoopIntegrationTest {

  private static final Duration WITHIN = Duration.ofSeconds(20);
  private final List<LeaderLoop> loops = new ArrayList<>();

  @AfterEach
  void closeLoops() {
    loops.forEach(LeaderLoop::close);
  }

  /** Short intervals, and EXIT so that a failed term surfaces from run(). */
  private LeaderLoopBuilder fast(TestDatabase db, LockKey key, String id) {
    return LeaderLoop.builder(db.dataSource(), key)
        .candidateId(id)
        .failurePolicy(FailurePolicy.EXIT)
        .retryInterval(Duration.ofMillis(100))
        .refreshInterval(Duration.ofMillis(200))
        .timing(FailoverTiming.DEFAULT.withHeartbeatInterval(Duration.ofMillis(100)));
  }

  private LeaderLoop track(LeaderLoop loop) {
    loops.add(loop);
    return loop;
  }

  private static LockKey freshKey() {
    return TestKeys.next();
  }

  @Test
  void oneLeaderRefreshesOnItsOwnSessionWhileTheOtherWaits(TestDatabase db) {
    LockKey key = freshKey();
    RecordingListener la = new RecordingListener();
    RecordingListener lb = new RecordingListener();
    List<Integer> refreshPids = new CopyOnWriteArrayList<>();
    LeaderTask task =
        ctx ->
            refreshPids.add(
                ctx.withConnection(
                    c -> {
                      try (Statement s = c.createStatement();
                          ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
                        rs.next();
                        return rs.getInt(1);
                      }
                    }));
    LeaderLoop a = track(fast(db, key, "a").listener(la).build());
    a.start(task);
    await().atMost(WITHIN).until(a::isLeader);
    LeaderLoop b = track(fast(db, key, "b").listener(lb).build());
    b.start(task);

    await().atMost(WITHIN).until(() -> lb.of("attempt").size() >= 3);
    await().atMost(WITHIN).until(() -> la.of("refreshed").size() >= 3);
    assertThat(b.isLeader()).isFalse();
    assertThat(b.state()).isEqualTo(LeaderLoop.State.RUNNING);
    assertThat(b.isLeader()).isFalse();
    assertThat(lb.of("attempt"))
        .allSatisfy(e -> assertThat(e.detail()).isEqualTo(AttemptResult.HELD_ELSEWHERE));
    Term term = a.currentTerm().orElseThrow();
    assertThat(refreshPids).containsOnly(term.backendPid());
    assertThat(la.kinds().subList(0, 3)).containsExactly("attempt", "acquired", "refreshed");
    assertThat(a.currentHolder().orElseThrow().candidateId()).contains("a");
  }

  @Test
  void standbyHoldsNoConnectionBetweenAttempts(TestDatabase db) throws Exception {
    LockKey key = freshKey();
    LeaderLoop a = track(fast(db, key, "leader").build());
    a.start(ctx -> {});
    await().atMost(WITHIN).until(a::isLeader);
    List<Integer> borrowedWhileStandbyWaits = new CopyOnWriteArrayList<>();
    com.zaxxer.hikari.HikariConfig config = new com.zaxxer.hikari.HikariConfig();
    config.setDataSource(db.dataSource());
    config.setMaximumPoolSize(2);
    try (com.zaxxer.hikari.HikariDataSource pool = new com.zaxxer.hikari.HikariDataSource(config)) {
      LeaderLoop b =
          track(
              LeaderLoop.builder(pool, key)
                  .candidateId("standby")
                  .timeSource(
                      new FakeTime() {
                        @Override
                        public void onWait(Duration d) throws InterruptedException {
                          borrowedWhileStandbyWaits.add(
                              pool.getHikariPoolMXBean().getActiveConnections());
                          Thread.sleep(20);
                        }
                      })
                  .build());
      b.start(ctx -> {});
      await().atMost(WITHIN).until(() -> borrowedWhileStandbyWaits.size() >= 5);
      b.close();
    }
    // The standby has no connection borrowed whenever it waits between attempts.
    assertThat(borrowedWhileStandbyWaits).containsOnly(0);
  }

  @Test
  void gracefulCloseHandsOverAndRunReturnsNormally(TestDatabase db) throws Exception {
    LockKey key = freshKey();
    RecordingListener la = new RecordingListener();
    LeaderLoop a = track(fast(db, key, "a").listener(la).build());
    CompletableFuture<Void> runA = a.start(ctx -> {});
    await().atMost(WITHIN).until(a::isLeader);
    LeaderLoop b = track(fast(db, key, "b").build());
    b.start(ctx -> {});

    a.close();

    runA.get(10, TimeUnit.SECONDS); // returned normally
    assertThat(la.lossReasons()).containsExactly(LossReason.CLOSED);
    assertThat(a.state()).isEqualTo(LeaderLoop.State.CLOSED);
    await().atMost(WITHIN).until(b::isLeader);
  }

  @Test
  void refreshThatThrowsEndsTheTermAndExitThrowsToTheCaller(TestDatabase db) throws Exception {
    LockKey key = freshKey();
    RecordingListener l = new RecordingListener();
    LeaderLoop a = track(fast(db, key, "a").listener(l).build());
    IllegalStateException boom = new IllegalStateException("state query failed");
    CompletableFuture<Void> run =
        a.start(
            ctx -> {
              throw boom;
            });
    assertThatThrownBy(() -> run.get(20, TimeUnit.SECONDS))
        .isInstanceOf(ExecutionException.class)
        .cause()
        .isInstanceOfSatisfying(
            LeadershipLostException.class,
            e -> {
              assertThat(e.reason()).isEqualTo(LossReason.REFRESH_FAILED);
              assertThat(e.getCause()).isSameAs(boom);
            });
    assertThat(l.kinds()).containsExactly("attempt", "acquired", "refreshFailed", "lost");
    // The lock was released when the term ended.
    // The session ends as soon as the server reads the Terminate message: a moment later.
    await()
        .atMost(WITHIN)
        .untilAsserted(
            () -> assertThat(AdvisoryLock.of(db.dataSource(), key).currentHolder()).isEmpty());
  }

  @Test
  void stepDownContendsAgainWithStrictlyIncreasingFencingTokens(TestDatabase db) {
    LockKey key = freshKey();
    RecordingListener l = new RecordingListener();
    AtomicInteger calls = new AtomicInteger();
    LeaderLoop a =
        track(fast(db, key, "a").failurePolicy(FailurePolicy.STEP_DOWN).listener(l).build());
    a.start(
        ctx -> {
          if (calls.incrementAndGet() % 2 == 1) {
            throw new IllegalStateException("every other refresh fails");
          }
        });
    await().atMost(WITHIN).until(() -> l.acquired().size() >= 4);
    List<Term> terms = l.acquired();
    for (int i = 1; i < terms.size(); i++) {
      assertThat(terms.get(i).fencingToken().isNewerThan(terms.get(i - 1).fencingToken()))
          .as("token of term %d > term %d", i + 1, i)
          .isTrue();
      assertThat(terms.get(i).number()).isEqualTo(terms.get(i - 1).number() + 1);
    }
    assertThat(l.lossReasons()).contains(LossReason.REFRESH_FAILED);
  }

  @Test
  void terminatedSessionIsNoticedAtOnceAndExitKeepsTheSqlState(TestDatabase db) throws Exception {
    LockKey key = freshKey();
    RecordingListener l = new RecordingListener();
    LeaderLoop a =
        track(
            fast(db, key, "a")
                .refreshInterval(Duration.ofHours(1))
                .timing(FailoverTiming.DEFAULT.withHeartbeatInterval(Duration.ofSeconds(3)))
                .listener(l)
                .build());
    CompletableFuture<Void> run = a.start(ctx -> {});
    await().atMost(WITHIN).until(() -> l.of("refreshed").size() == 1);
    int pid = a.currentTerm().orElseThrow().backendPid();

    db.terminateBackend(pid);

    assertThatThrownBy(() -> run.get(20, TimeUnit.SECONDS))
        .cause()
        .isInstanceOfSatisfying(
            LeadershipLostException.class,
            e -> {
              assertThat(e.reason()).isEqualTo(LossReason.SESSION_LOST);
              assertThat(e.sqlState()).contains("57P01");
            });
    assertThat(l.lossReasons()).containsExactly(LossReason.SESSION_LOST);
  }

  @Test
  void hungTaskIsInterruptedAtItsTimeout(TestDatabase db) {
    LockKey key = freshKey();
    RecordingListener l = new RecordingListener();
    AtomicInteger interrupted = new AtomicInteger();
    LeaderLoop a =
        track(fast(db, key, "a").refreshTimeout(Duration.ofMillis(300)).listener(l).build());
    CompletableFuture<Void> run =
        a.start(
            ctx -> {
              try {
                Thread.sleep(TimeUnit.HOURS.toMillis(1));
              } catch (InterruptedException e) {
                interrupted.incrementAndGet();
                throw e;
              }
            });
    await().atMost(WITHIN).until(run::isDone);
    assertThat(interrupted).hasValue(1);
    assertThat(l.lossReasons()).containsExactly(LossReason.REFRESH_TIMED_OUT);
    assertThat(l.of("lost").get(0).thread()).startsWith("retsu-lock-watchdog-");
    assertThatThrownBy(run::join)
        .cause()
        .isInstanceOfSatisfying(
            LeadershipLostException.class,
            e -> assertThat(e.reason()).isEqualTo(LossReason.REFRESH_TIMED_OUT));
  }

  @Test
  void aTaskThatRestoresTheInterruptFlagDoesNotTurnATimeoutIntoASilentStop(TestDatabase db) {
    LockKey key = freshKey();
    LeaderLoop a = track(fast(db, key, "a").refreshTimeout(Duration.ofMillis(300)).build());
    CompletableFuture<Void> run =
        a.start(
            ctx -> {
              try {
                Thread.sleep(TimeUnit.HOURS.toMillis(1));
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt(); // the usual idiom
              }
            });
    // EXIT: the timed-out term surfaces from run(), it is not mistaken for a stop request.
    assertThatThrownBy(() -> run.get(20, TimeUnit.SECONDS))
        .cause()
        .isInstanceOfSatisfying(
            LeadershipLostException.class,
            e -> assertThat(e.reason()).isEqualTo(LossReason.REFRESH_TIMED_OUT));
    assertThat(a.state()).isEqualTo(LeaderLoop.State.FAILED);
  }

  @Test
  void closeFromAnotherThreadStopsARunningLeader(TestDatabase db) throws Exception {
    LockKey key = freshKey();
    LeaderLoop a = track(fast(db, key, "a").build());
    CompletableFuture<Void> run = a.start(ctx -> {});
    await().atMost(WITHIN).until(a::isLeader);
    a.close();
    run.get(10, TimeUnit.SECONDS);
    a.close(); // idempotent
    // The session ends as soon as the server reads the Terminate message: a moment later.
    await()
        .atMost(WITHIN)
        .untilAsserted(
            () -> assertThat(AdvisoryLock.of(db.dataSource(), key).currentHolder()).isEmpty());
    assertThatThrownBy(() -> a.run(ctx -> {}))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageStartingWith("A LeaderLoop runs once; this one is CLOSED");
  }

  @Test
  void interruptingTheRunnerStopsTheLoopAndKeepsTheFlag(TestDatabase db) throws Exception {
    LockKey key = freshKey();
    LeaderLoop a = track(fast(db, key, "a").build());
    CompletableFuture<Boolean> flag = new CompletableFuture<>();
    Thread t =
        new Thread(
            () -> {
              a.run(ctx -> {});
              flag.complete(Thread.currentThread().isInterrupted());
            });
    t.start();
    await().atMost(WITHIN).until(a::isLeader);
    t.interrupt();
    assertThat(flag.get(10, TimeUnit.SECONDS)).isTrue();
    assertThat(a.state()).isEqualTo(LeaderLoop.State.CLOSED);
  }

  @Test
  void listenerThatThrowsNeverBreaksTheLoop(TestDatabase db) {
    LockKey key = freshKey();
    RecordingListener after = new RecordingListener();
    LeaderListener broken =
        new LeaderListener() {
          @Override
          public void onAcquired(Term term) {
            throw new IllegalStateException("listener bug");
          }

          @Override
          public void onRefreshSucceeded(Term term, Duration duration) {
            throw new IllegalStateException("listener bug");
          }
        };
    LeaderLoop a = track(fast(db, key, "a").listener(broken).listener(after).build());
    a.start(ctx -> {});
    await().atMost(WITHIN).until(() -> after.of("refreshed").size() >= 2);
    assertThat(a.isLeader()).isTrue();
  }

  @Test
  void firstAttemptAgainstAnUnreachableDatabaseFailsFast() {
    org.postgresql.ds.PGSimpleDataSource nowhere = new org.postgresql.ds.PGSimpleDataSource();
    nowhere.setUrl("jdbc:postgresql://127.0.0.1:1/none");
    LeaderLoop loop = LeaderLoop.builder(nowhere, LockKey.of(1L)).candidateId("c").build();
    assertThatThrownBy(() -> loop.run(ctx -> {}))
        .isInstanceOfSatisfying(
            AdvisoryLockException.class, e -> assertThat(e.sqlState()).contains("08001"));
    assertThat(loop.state()).isEqualTo(LeaderLoop.State.FAILED);
    assertThat(loop.failure()).containsInstanceOf(AdvisoryLockException.class);
  }

  @Test
  void aLoopBuiltNotToFailFastLeadsOnceTheDatabaseComesUp(TestDatabase db) {
    LockKey key = freshKey();
    DownUntilOpened late = new DownUntilOpened(db.dataSource());
    RecordingListener l = new RecordingListener();
    LeaderLoop a =
        track(
            LeaderLoop.builder(late, key)
                .candidateId("late")
                .retryInterval(Duration.ofMillis(100))
                .failFast(false)
                .listener(l)
                .build());
    CompletableFuture<Void> run = a.start(ctx -> {});
    await().atMost(WITHIN).until(() -> late.refused() >= 3);
    assertThat(run).isNotDone();
    assertThat(a.state()).isEqualTo(LeaderLoop.State.RUNNING);
    assertThat(l.of("attempt")).allMatch(e -> e.detail() == AttemptResult.ERROR);
    late.open();
    await().atMost(WITHIN).until(a::isLeader);
  }

  @Test
  void aWaitLoopBuiltNotToFailFastLeadsOnceTheDatabaseComesUp(TestDatabase db) {
    LockKey key = freshKey();
    DownUntilOpened late = new DownUntilOpened(db.dataSource());
    LeaderLoop a =
        track(
            LeaderLoop.builder(late, key)
                .candidateId("late-wait")
                .takeover(TakeoverMode.WAIT)
                .retryInterval(Duration.ofMillis(100))
                .failFast(false)
                .build());
    CompletableFuture<Void> run = a.start(ctx -> {});
    await().atMost(WITHIN).until(() -> late.refused() >= 3);
    assertThat(run).isNotDone();
    late.open();
    await().atMost(WITHIN).until(a::isLeader);
  }

  @Test
  void serverRestartWhileLeadingUnderStepDownElectsALeaderAgain(TestDatabase db) {
    Assumptions.assumeTrue(db.server().supportsRestart(), "needs a server the tests can restart");
    LockKey key = freshKey();
    RecordingListener l = new RecordingListener();
    LeaderLoop a =
        track(fast(db, key, "a").failurePolicy(FailurePolicy.STEP_DOWN).listener(l).build());
    a.start(ctx -> {});
    await().atMost(WITHIN).until(a::isLeader);
    FencingToken before = a.currentTerm().orElseThrow().fencingToken();

    db.server().restart(ShutdownMode.IMMEDIATE);

    await().atMost(WITHIN).until(() -> l.acquired().size() >= 2);
    assertThat(l.lossReasons()).first().isEqualTo(LossReason.SESSION_LOST);
    assertThat(l.acquired().get(1).fencingToken().isNewerThan(before)).isTrue();
    await().atMost(WITHIN).until(a::isLeader);
  }

  /**
   * A listener is user code: one that never returns from {@code onLost} keeps the lock no longer
   * than {@code closeTimeout} after a graceful close, and the standby then leads while it still
   * hangs (the term was over before it was told). Repeated: the close and the loop's own thread
   * race to finish the term, and whichever hears {@code onLost} hang, the other must bound it (4 of
   * 15 repetitions failed when only the loop's thread did).
   */
  @RepeatedTest(15)
  void aListenerThatHangsInOnLostHoldsTheLockAtMostCloseTimeout(TestDatabase db) {
    LockKey key = freshKey();
    CountDownLatch hang = new CountDownLatch(1);
    AtomicBoolean returned = new AtomicBoolean();
    LeaderLoop a =
        track(
            fast(db, key, "a")
                .closeTimeout(Duration.ofMillis(500))
                .listener(
                    new LeaderListener() {
                      @Override
                      public void onLost(Term term, LossReason reason, Throwable cause) {
                        boolean interrupted = false;
                        while (hang.getCount() > 0) {
                          try {
                            hang.await();
                          } catch (InterruptedException e) {
                            interrupted = true; // a hung listener ignores interrupts too
                          }
                        }
                        returned.set(true);
                        if (interrupted) {
                          Thread.currentThread().interrupt();
                        }
                      }
                    })
                .build());
    try {
      a.start(ctx -> {});
      await().atMost(WITHIN).until(a::isLeader);
      LeaderLoop b = track(fast(db, key, "b").build());
      b.start(ctx -> {});
      CompletableFuture.runAsync(a::close);

      // Without the release after closeTimeout (0.5 s) only the server's idle_session_timeout
      // (11 s) would free the lock.
      await().atMost(Duration.ofSeconds(6)).until(b::isLeader);
      assertThat(returned).as("a's listener still hangs").isFalse();
    } finally {
      hang.countDown();
    }
  }

  @Test
  void sessionCarriesTheServerSideBounds(TestDatabase db) throws SQLException {
    LockKey key = freshKey();
    LeaderLoop a = track(fast(db, key, "a").build());
    List<String> settings = new CopyOnWriteArrayList<>();
    a.start(
        ctx -> {
          if (settings.isEmpty()) {
            ctx.withConnection(
                c -> {
                  try (Statement s = c.createStatement();
                      ResultSet rs =
                          s.executeQuery(
                              "SELECT current_setting('tcp_keepalives_idle'),"
                                  + " current_setting('tcp_keepalives_interval'),"
                                  + " current_setting('tcp_keepalives_count'),"
                                  + " current_setting('idle_session_timeout'),"
                                  + " current_setting('client_connection_check_interval'),"
                                  + " current_setting('application_name')")) {
                    rs.next();
                    for (int i = 1; i <= 5; i++) {
                      settings.add(rs.getString(i));
                    }
                    // The term's token shows in application_name from the statement that took it.
                    settings.add(
                        rs.getString(6).equals("retsu-lock:a#" + ctx.fencingToken())
                            ? "retsu-lock:a#<token>"
                            : rs.getString(6));
                    return null;
                  }
                });
          }
        });
    await().atMost(WITHIN).until(() -> settings.size() == 6);
    assertThat(settings).containsExactly("5", "2", "3", "11s", "2s", "retsu-lock:a#<token>");
  }
}
