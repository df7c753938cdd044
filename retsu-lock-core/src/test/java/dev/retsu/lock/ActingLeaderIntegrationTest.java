package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.fakes.RecordingListener;
import dev.retsu.lock.fakes.SharedBackendDataSource;
import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.fakes.TestLoops;
import dev.retsu.lock.internal.session.KeySql;
import dev.retsu.lock.internal.session.LockWaiter;
import dev.retsu.lock.testing.FaultProxy;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Invariant 5, at most one acting leader, struck where it hurts: while the leader's task runs. Each
 * test is the regression test of one defect that let two candidates act at once.
 */
@ExtendWith(PostgresExtension.class)
class ActingLeaderIntegrationTest {

  private static final Duration WITHIN = Duration.ofSeconds(20);
  private final List<LeaderLoop> loops = new ArrayList<>();

  @AfterEach
  void closeLoops() {
    loops.forEach(LeaderLoop::close);
  }

  private LeaderLoop track(LeaderLoop loop) {
    loops.add(loop);
    return loop;
  }

  private static LeaderLoopBuilder fast(TestDatabase db, LockKey key, String id) {
    return TestLoops.fast(LeaderLoop.builder(db.dataSource(), key)).candidateId(id);
  }

  /** Who holds the key right now, seen from an independent session. */
  private static Optional<Integer> holder(TestDatabase db, LockKey key) throws SQLException {
    List<Integer> pids =
        db.queryInts(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND "
                + KeySql.pgLocksPredicate(key, "pg_locks"),
            TestKeys.lockArguments(key));
    return pids.stream().findFirst();
  }

  @Test
  void ensureLeaderFailsAtOnceWhenTheServerEndedTheSessionDuringTheTask(TestDatabase db)
      throws Exception {
    LockKey key = TestKeys.next();
    CountDownLatch inTask = new CountDownLatch(1);
    CountDownLatch proceed = new CountDownLatch(1);
    AtomicReference<Throwable> checkResult = new AtomicReference<>();
    AtomicInteger pid = new AtomicInteger();
    LeaderLoop a = track(fast(db, key, "a").refreshInterval(Duration.ofMinutes(1)).build());
    a.start(
        ctx -> {
          if (inTask.getCount() == 0) {
            return;
          }
          pid.set(ctx.term().backendPid());
          inTask.countDown();
          // Non-database work, during which the server ends the session. It ignores interrupts
          // on purpose: a task may not check, and ensureLeader() must still fail afterwards.
          while (proceed.getCount() > 0) {
            LockSupport.parkNanos(1_000_000L);
          }
          try {
            ctx.ensureLeader();
            checkResult.set(new AssertionError("ensureLeader() passed"));
          } catch (LeadershipLostException e) {
            checkResult.set(e);
          }
        });
    assertThat(inTask.await(20, TimeUnit.SECONDS)).isTrue();
    assertThat(db.terminateBackend(pid.get())).isTrue();
    await().atMost(WITHIN).until(() -> !db.backendExists(pid.get()));
    proceed.countDown();
    await().atMost(WITHIN).until(() -> checkResult.get() != null);
    assertThat(checkResult.get())
        .isInstanceOf(LeadershipLostException.class)
        .satisfies(
            e ->
                assertThat(((LeadershipLostException) e).reason())
                    .isEqualTo(LossReason.SESSION_LOST));
  }

  /**
   * A reset with no message before it (a proxy or pooler that dropped the link) is what only a read
   * of the socket sees: {@code ensureLeader()} does not read, so the watchdog does while the task
   * works outside the session. The heartbeat here is 2 s and the deadline 8 s, so the term ends
   * within the bound below only because of that read.
   */
  @Test
  void aResetWithNoMessageEndsTheTermWhileTheTaskWorksOutsideTheSession(TestDatabase db)
      throws Exception {
    LockKey key = TestKeys.next();
    FaultProxy proxy = FaultProxy.inFrontOf(db.jdbcUrl());
    try (proxy) {
      PGSimpleDataSource viaProxy = db.dataSource();
      viaProxy.setUrl(proxy.rewrite(db.jdbcUrl()));
      CountDownLatch inTask = new CountDownLatch(1);
      AtomicReference<Throwable> checkResult = new AtomicReference<>();
      AtomicLong lastPass = new AtomicLong();
      LeaderLoop a =
          track(
              LeaderLoop.builder(viaProxy, key)
                  .candidateId("reset")
                  .refreshInterval(Duration.ofMinutes(1))
                  .refreshTimeout(Duration.ofMinutes(1))
                  .build());
      a.start(
          ctx -> {
            if (inTask.getCount() == 0) {
              return;
            }
            inTask.countDown();
            try {
              while (true) {
                ctx.ensureLeader(); // then work outside the database, ignoring interrupts
                lastPass.set(System.nanoTime());
                LockSupport.parkNanos(200_000L);
              }
            } catch (LeadershipLostException e) {
              checkResult.set(e);
            }
          });
      assertThat(inTask.await(20, TimeUnit.SECONDS)).isTrue();
      proxy.resetAll();
      long resetAt = System.nanoTime();
      await().atMost(Duration.ofMillis(1500)).until(() -> checkResult.get() != null);
      assertThat(((LeadershipLostException) checkResult.get()).reason())
          .isEqualTo(LossReason.SESSION_LOST);
      // The watchdog reads every 10 ms; a heartbeat (2 s) would be the bound without that read.
      assertThat(Duration.ofNanos(lastPass.get() - resetAt))
          .as("the last check that passed, after the reset")
          .isLessThan(Duration.ofMillis(500));
    }
  }

  @Test
  void aTaskThatSwallowsTheSessionLostErrorStillCannotAct(TestDatabase db) throws Exception {
    LockKey key = TestKeys.next();
    AtomicReference<Object> outcome = new AtomicReference<>();
    LeaderLoop a = track(fast(db, key, "a").refreshInterval(Duration.ofMinutes(1)).build());
    a.start(
        ctx -> {
          if (outcome.get() != null) {
            return;
          }
          db.terminateBackend(ctx.term().backendPid());
          try (Statement s = ctx.connection().createStatement()) {
            s.execute("SELECT 1");
          } catch (SQLException swallowed) {
            // user code that logs and carries on
          }
          try {
            ctx.ensureLeader();
            outcome.set("passed");
          } catch (LeadershipLostException e) {
            outcome.set(e.reason());
          }
        });
    await().atMost(WITHIN).until(() -> outcome.get() != null);
    assertThat(outcome.get()).isEqualTo(LossReason.SESSION_LOST);
  }

  @Test
  void aPoolThatLendsConnectionsWithAutocommitOffStillGivesAnObservableLeader(TestDatabase db)
      throws Exception {
    LockKey key = TestKeys.next();
    com.zaxxer.hikari.HikariConfig config = new com.zaxxer.hikari.HikariConfig();
    config.setDataSource(db.dataSource());
    config.setAutoCommit(false); // every borrowed connection is inside a transaction
    config.setMaximumPoolSize(2);
    try (com.zaxxer.hikari.HikariDataSource pool = new com.zaxxer.hikari.HikariDataSource(config)) {
      AtomicInteger pid = new AtomicInteger();
      RecordingListener events = new RecordingListener();
      LeaderLoop a =
          track(
              TestLoops.fast(LeaderLoop.builder(pool, key))
                  .candidateId("autocommit-off")
                  .refreshInterval(Duration.ofMinutes(1))
                  .listener(events)
                  .build());
      a.start(ctx -> pid.set(ctx.term().backendPid()));
      await().atMost(WITHIN).until(() -> pid.get() != 0);
      // Sampled across heartbeats: the leader's session never idles inside a transaction.
      List<String> states = new CopyOnWriteArrayList<>();
      await()
          .atMost(WITHIN)
          .pollInterval(Duration.ofMillis(50))
          .until(
              () -> {
                states.add(sessionState(db, pid.get()));
                return states.size() >= 30;
              });
      assertThat(states).isSubsetOf("idle", "active");
      db.terminateBackend(pid.get());
      await().atMost(WITHIN).until(() -> !events.of("lost").isEmpty());
      assertEndedBySocketWait(events);
      a.close();
    }
  }

  @Test
  void aRoleIdleInTransactionTimeoutCannotEndTheLeadersSession(TestDatabase db) throws Exception {
    db.execute(
        "ALTER DATABASE \"" + db.name() + "\" SET idle_in_transaction_session_timeout = '200ms'");
    LockKey key = TestKeys.next();
    AtomicReference<Object> outcome = new AtomicReference<>();
    LeaderLoop a = track(fast(db, key, "a").refreshInterval(Duration.ofMinutes(1)).build());
    a.start(
        ctx -> {
          if (outcome.get() != null) {
            return;
          }
          Connection c = ctx.connection();
          c.setAutoCommit(false);
          try (Statement s = c.createStatement()) {
            s.execute("SELECT 1");
          }
          // Idle in the transaction far longer than the role's timeout.
          Thread.sleep(800);
          try {
            ctx.ensureLeader();
            // Passing the check must mean the lock is still ours.
            outcome.set(holder(db, key).orElse(-1).equals(ctx.term().backendPid()));
            c.commit();
          } catch (LeadershipLostException e) {
            outcome.set(e);
          }
        });
    await().atMost(WITHIN).until(() -> outcome.get() != null);
    assertThat(outcome.get()).isEqualTo(true);
  }

  @Test
  void closeStopsTheTaskBeforeTheLockIsReleased(TestDatabase db) throws Exception {
    LockKey key = TestKeys.next();
    CountDownLatch inTask = new CountDownLatch(1);
    AtomicLong taskEnded = new AtomicLong();
    LeaderLoop a =
        track(
            fast(db, key, "a")
                .refreshInterval(Duration.ofMinutes(1))
                .closeTimeout(Duration.ofSeconds(5))
                .build());
    a.start(
        ctx -> {
          inTask.countDown();
          try {
            Thread.sleep(60_000);
          } catch (InterruptedException e) {
            // An in-flight step that finishes what it started before it stops.
            long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(400);
            while (System.nanoTime() < until) {
              Thread.onSpinWait();
            }
            taskEnded.set(System.nanoTime());
            throw e;
          }
        });
    assertThat(inTask.await(20, TimeUnit.SECONDS)).isTrue();
    // A raw waiter stands by on its own session: the moment the lock is released it is granted.
    AtomicLong granted = new AtomicLong();
    CompletableFuture<Void> waiter =
        CompletableFuture.runAsync(
            () -> {
              try (Connection c = db.connect();
                  Statement s = c.createStatement()) {
                s.execute("SELECT pg_advisory_lock(" + TestKeys.sqlLiteral(key) + ")");
                granted.set(System.nanoTime());
              } catch (SQLException e) {
                throw new IllegalStateException(e);
              }
            });
    await().atMost(WITHIN).until(() -> waitingFor(db, key) == 1);
    a.close();
    waiter.get(20, TimeUnit.SECONDS);
    assertThat(taskEnded.get()).isPositive();
    assertThat(granted.get() - taskEnded.get())
        .as(
            "the lock was granted to the next candidate %d ms after the task stopped",
            (granted.get() - taskEnded.get()) / 1_000_000)
        .isPositive();
  }

  @Test
  void aRefreshThatIgnoresTheInterruptIsReleasedAnywayAfterCloseTimeout(TestDatabase db)
      throws Exception {
    LockKey key = TestKeys.next();
    CountDownLatch inTask = new CountDownLatch(1);
    java.util.concurrent.atomic.AtomicBoolean letGo =
        new java.util.concurrent.atomic.AtomicBoolean();
    java.util.concurrent.atomic.AtomicBoolean stillRunning =
        new java.util.concurrent.atomic.AtomicBoolean();
    AtomicReference<Throwable> checkAfterRelease = new AtomicReference<>();
    LeaderLoop a =
        track(
            fast(db, key, "a")
                .refreshInterval(Duration.ofMinutes(1))
                .refreshTimeout(Duration.ofMinutes(1))
                .closeTimeout(Duration.ofMillis(500))
                // No idle_session_timeout: only the library itself can free this lock while the
                // process lives, so the release seen below is close()'s doing.
                .timing(TestLoops.TIMING.withServerIdleSessionTimeout(Duration.ZERO))
                .build());
    a.start(
        ctx -> {
          stillRunning.set(true);
          inTask.countDown();
          while (!letGo.get()) {
            LockSupport.parkNanos(1_000_000L); // ignores interrupts
          }
          try {
            ctx.ensureLeader();
          } catch (LeadershipLostException e) {
            checkAfterRelease.set(e);
          }
          stillRunning.set(false);
        });
    assertThat(inTask.await(20, TimeUnit.SECONDS)).isTrue();
    a.close(); // returns after closeTimeout although the refresh still runs
    // The lock was released anyway: another session takes it while the refresh still runs.
    await()
        .atMost(WITHIN)
        .until(
            () ->
                AdvisoryLock.of(db.dataSource(), key)
                    .tryAcquire()
                    .map(
                        l -> {
                          l.close();
                          return true;
                        })
                    .orElse(false));
    assertThat(stillRunning).isTrue();
    // And the refresh that kept running cannot pass the check any more.
    letGo.set(true);
    await().atMost(WITHIN).until(() -> checkAfterRelease.get() != null);
  }

  private static int waitingFor(TestDatabase db, LockKey key) throws SQLException {
    return db.queryInts(
            "SELECT count(*)::int FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND "
                + KeySql.pgLocksPredicate(key, "pg_locks"),
            TestKeys.lockArguments(key))
        .get(0);
  }

  @Test
  void aCloseWhileTheTaskHoldsAnOpenTransactionNeverCommitsItsWork(TestDatabase db)
      throws Exception {
    // The graceful release commits its `released` notices and unlocks in one round trip, with a
    // COMMIT of its own: on a session whose transaction is still open (a task that ignores the
    // interrupt past closeTimeout), that COMMIT would commit the task's unfinished work. The
    // session's end must roll it back instead.
    LockKey key = TestKeys.next();
    String table = "close_open_tx_" + Long.toHexString(TestKeys.nextValue());
    db.execute("CREATE TABLE " + table + " (v int)");
    CountDownLatch inserted = new CountDownLatch(1);
    LeaderLoop a = track(fast(db, key, "a").closeTimeout(Duration.ofMillis(300)).build());
    a.start(
        ctx -> {
          Connection c = ctx.connection();
          c.setAutoCommit(false);
          try (Statement s = c.createStatement()) {
            s.execute("INSERT INTO " + table + " VALUES (1)");
          }
          inserted.countDown();
          long until = System.nanoTime() + Duration.ofSeconds(3).toNanos();
          while (System.nanoTime() - until < 0) {
            LockSupport.parkNanos(Duration.ofMillis(10).toNanos()); // deaf to the interrupt
          }
        });
    assertThat(inserted.await(WITHIN.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
    a.close();
    await().atMost(WITHIN).until(() -> holder(db, key).isEmpty());
    assertThat(db.queryInts("SELECT count(*)::int FROM " + table)).containsExactly(0);
  }

  @Test
  void aTaskThatLeavesAutocommitOffNeverLeavesTheSessionIdleInTransaction(TestDatabase db)
      throws Exception {
    LockKey key = TestKeys.next();
    AtomicInteger pid = new AtomicInteger();
    AtomicInteger runs = new AtomicInteger();
    RecordingListener events = new RecordingListener();
    LeaderLoop a =
        track(
            fast(db, key, "a")
                .refreshInterval(Duration.ofSeconds(30))
                .timing(TestLoops.TIMING.withHeartbeatInterval(Duration.ofMillis(100)))
                .listener(events)
                .build());
    a.start(
        ctx -> {
          pid.set(ctx.term().backendPid());
          Connection c = ctx.connection();
          c.setAutoCommit(false);
          try (Statement s = c.createStatement()) {
            s.execute("SELECT 1");
          }
          c.commit();
          runs.incrementAndGet();
        });
    await().atMost(WITHIN).until(() -> runs.get() == 1);
    List<String> states = new CopyOnWriteArrayList<>();
    // Sample the session over several heartbeats.
    await()
        .atMost(WITHIN)
        .pollInterval(Duration.ofMillis(20))
        .until(
            () -> {
              states.add(sessionState(db, pid.get()));
              return states.size() >= 40;
            });
    assertThat(states).doesNotContain("idle in transaction");
    // And a terminated session is still noticed at once.
    db.terminateBackend(pid.get());
    await().atMost(WITHIN).until(() -> !events.of("lost").isEmpty());
    assertEndedBySocketWait(events);
  }

  /**
   * The term ended because the leader's wait on its session's socket read the FATAL (the cause is
   * the driver's SQLException, 57P01), not at a later heartbeat: the wait works only outside a
   * transaction, so this is the proof that the session was left observable.
   */
  private static void assertEndedBySocketWait(RecordingListener events) {
    RecordingListener.Event lost = events.of("lost").get(0);
    assertThat(lost.detail()).isEqualTo(LossReason.SESSION_LOST);
    assertThat(lost.error())
        .isInstanceOfSatisfying(
            SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("57P01"));
  }

  private static String sessionState(TestDatabase db, int pid) throws SQLException {
    try (Connection c = db.connect();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT state FROM pg_stat_activity WHERE pid = " + pid)) {
      return rs.next() ? rs.getString(1) : "gone";
    }
  }

  @Test
  void waitModeKeepsWaitingUnderAShortRoleStatementTimeout(TestDatabase db) throws Exception {
    db.execute("ALTER DATABASE \"" + db.name() + "\" SET statement_timeout = '200ms'");
    LockKey key = TestKeys.next();
    RecordingListener events = new RecordingListener();
    AdvisoryLockLease holder = AdvisoryLock.of(db.dataSource(), key).tryAcquire().orElseThrow();
    try {
      LeaderLoop b =
          track(
              fast(db, key, "b")
                  .takeover(TakeoverMode.WAIT)
                  .waitTimeout(Duration.ofSeconds(1))
                  .listener(events)
                  .build());
      CompletableFuture<Void> run = b.start(ctx -> {});
      await().atMost(WITHIN).until(() -> waitingFor(db, key) == 1);
      // A re-arm comes only after a whole 1 s wait, five times the role's statement_timeout: the
      // wait was not cancelled, and it was re-armed rather than failed.
      await().atMost(WITHIN).until(() -> !events.of("attempt").isEmpty());
      assertThat(events.of("attempt").get(0).detail()).isEqualTo(AttemptResult.HELD_ELSEWHERE);
      assertThat(run).isNotDone();
      assertThat(events.of("attempt")).noneMatch(e -> e.detail() == AttemptResult.ERROR);
      holder.close();
      await().atMost(WITHIN).until(b::isLeader);
    } finally {
      holder.close();
    }
  }

  @Test
  void onLostNeverStartsBeforeOnAcquiredReturnedNorRefreshesFollowIt(TestDatabase db)
      throws Exception {
    LockKey key = TestKeys.next();
    List<String> calls = new CopyOnWriteArrayList<>();
    CountDownLatch inAcquired = new CountDownLatch(1);
    LeaderLoop a =
        track(
            fast(db, key, "a")
                .listener(
                    new LeaderListener() {
                      @Override
                      public void onAcquired(Term term) {
                        calls.add("acquired-start");
                        inAcquired.countDown();
                        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(300);
                        while (System.nanoTime() < until) {
                          Thread.onSpinWait();
                        }
                        calls.add("acquired-end");
                      }

                      @Override
                      public void onRefreshSucceeded(Term term, Duration duration) {
                        calls.add("refreshed");
                      }

                      @Override
                      public void onLost(Term term, LossReason reason, Throwable cause) {
                        calls.add("lost");
                      }
                    })
                .build());
    a.start(ctx -> {});
    assertThat(inAcquired.await(20, TimeUnit.SECONDS)).isTrue();
    a.close();
    await().atMost(WITHIN).until(() -> calls.contains("lost"));
    assertThat(calls).startsWith("acquired-start", "acquired-end");
    assertThat(calls.get(calls.size() - 1)).isEqualTo("lost");
    assertThat(a.isLeader()).isFalse();
  }

  @Test
  void aLongTaskWithoutDatabaseWorkIsNotFencedWhileItsSessionIsAlive(TestDatabase db)
      throws Exception {
    LockKey key = TestKeys.next();
    RecordingListener events = new RecordingListener();
    AtomicReference<Object> outcome = new AtomicReference<>();
    LeaderLoop a =
        track(
            fast(db, key, "a")
                .refreshInterval(Duration.ofMinutes(1))
                .refreshTimeout(Duration.ofSeconds(30))
                .listener(events)
                .build());
    a.start(
        ctx -> {
          if (outcome.get() != null) {
            return;
          }
          // Longer than selfFenceAfter (2 s), never touching the session or calling heartbeat().
          Thread.sleep(TestLoops.SELF_FENCE.plusSeconds(1).toMillis());
          try {
            ctx.ensureLeader();
            outcome.set("passed");
          } catch (LeadershipLostException e) {
            outcome.set(e);
          }
        });
    await().atMost(WITHIN).until(() -> outcome.get() != null);
    assertThat(outcome.get()).isEqualTo("passed");
    assertThat(events.lossReasons()).isEmpty();
  }

  @Test
  void theLeasesConnectionCannotReturnTheLockedSessionToThePool(TestDatabase db) throws Exception {
    LockKey key = TestKeys.next();
    try (AdvisoryLockLease lease = AdvisoryLock.of(db.dataSource(), key).tryAcquire().get()) {
      Connection escaped = lease.connection().createStatement().getConnection();
      escaped.close();
      assertThat(holder(db, key)).contains(lease.backendPid());
      assertThatThrownBy(() -> lease.connection().unwrap(org.postgresql.PGConnection.class))
          .isInstanceOf(SQLException.class);
    }
  }

  @Test
  void aWaiterOnABackendSharedWithTheHolderIsRefused(TestDatabase db) throws Exception {
    LockKey key = TestKeys.next();
    try (SharedBackendDataSource shared = new SharedBackendDataSource(db)) {
      AdvisoryLock lock = AdvisoryLock.of(shared, key);
      try (LockWaiter waiter = LockWaiter.open(lock.spec(), Duration.ofSeconds(1))) {
        AdvisoryLockLease holder = lock.tryAcquire().orElseThrow();
        assertThatThrownBy(waiter::await).isInstanceOf(UnsafeSessionException.class);
        assertThat(holder.isHeld()).isTrue();
      }
    }
  }
}
