package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.fakes.DelegatingDataSource;
import dev.retsu.lock.fakes.RecordingListener;
import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.faults.FaultModes;
import dev.retsu.lock.testing.FaultProxy;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.postgresql.ds.PGSimpleDataSource;
import org.postgresql.jdbc.PreferQueryMode;

/** {@link TakeoverMode#WAIT}: the standby blocks in pg_advisory_lock and is handed the lock. */
@ExtendWith(PostgresExtension.class)
class WaitTakeoverIntegrationTest {

  private static final Duration WITHIN = Duration.ofSeconds(60);
  private final List<AutoCloseable> closeables = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (int i = closeables.size() - 1; i >= 0; i--) {
      closeables.get(i).close();
    }
  }

  private <T extends AutoCloseable> T track(T c) {
    closeables.add(c);
    return c;
  }

  private static LeaderLoopBuilder candidate(javax.sql.DataSource ds, LockKey key, String id) {
    return LeaderLoop.builder(ds, key)
        .candidateId(id)
        .retryInterval(Duration.ofMillis(200))
        .refreshInterval(Duration.ofMillis(200))
        .timing(FailoverTiming.DEFAULT.withHeartbeatInterval(Duration.ofMillis(100)));
  }

  @Test
  void waitingStandbyHoldsOneSessionAndTakesOverWhenTheLeaderCloses(TestDatabase db)
      throws Exception {
    LockKey key = TestKeys.next();
    LeaderLoop a = track(candidate(db.dataSource(), key, "wait-a").build());
    a.start(ctx -> {});
    await().atMost(WITHIN).until(a::isLeader);
    RecordingListener lb = new RecordingListener();
    AtomicLong firstRefresh = new AtomicLong();
    LeaderLoop b =
        track(
            candidate(db.dataSource(), key, "wait-b")
                .takeover(TakeoverMode.WAIT)
                .waitTimeout(Duration.ofSeconds(30))
                .listener(lb)
                .build());
    b.start(ctx -> firstRefresh.compareAndSet(0, System.nanoTime()));
    await().atMost(WITHIN).until(() -> db.clientSessions("retsu-lock:wait-b") == 1);
    assertThat(lb.of("attempt")).isEmpty(); // still inside its first, blocking wait
    await().atMost(WITHIN).until(b::isWaiting); // which health can tell without I/O
    assertThat(a.isWaiting()).isFalse();

    long closed = System.nanoTime();
    a.close();

    await().atMost(WITHIN).until(b::isLeader);
    await().atMost(WITHIN).until(() -> firstRefresh.get() != 0);
    record("wait-takeover-after-close-ms", (firstRefresh.get() - closed) / 1e6);
    assertThat(lb.of("attempt")).hasSize(1);
    assertThat(lb.of("attempt").get(0).detail()).isEqualTo(AttemptResult.ACQUIRED);
    assertThat(b.isWaiting()).isFalse();
  }

  /**
   * The waiting session runs under the waiter's own lock_timeout and no statement_timeout; the
   * statement that is granted the lock puts the session's own values back (no extra round trip at
   * the takeover), also after the wait re-armed several times. The leader's SQL then runs under the
   * values the user configured.
   */
  @Test
  void aGrantedWaitPutsTheSessionsOwnTimeoutsBack(TestDatabase db) throws Exception {
    LockKey key = TestKeys.next();
    AdvisoryLockLease held =
        track(AdvisoryLock.of(db.dataSource(), key).tryAcquire().orElseThrow());
    PGSimpleDataSource own = db.dataSource();
    own.setOptions("-c lock_timeout=1234ms -c statement_timeout=4321ms");
    RecordingListener lb = new RecordingListener();
    CompletableFuture<List<String>> seen = new CompletableFuture<>();
    LeaderLoop b =
        track(
            candidate(own, key, "wait-timeouts")
                .takeover(TakeoverMode.WAIT)
                .waitTimeout(Duration.ofMillis(300))
                .listener(lb)
                .build());
    b.start(
        ctx -> {
          try (java.sql.Statement s = ctx.connection().createStatement();
              java.sql.ResultSet rs =
                  s.executeQuery(
                      "SELECT current_setting('lock_timeout'),"
                          + " current_setting('statement_timeout')")) {
            rs.next();
            seen.complete(List.of(rs.getString(1), rs.getString(2)));
          }
        });
    // Re-armed at least twice (each timed-out wait is one HELD_ELSEWHERE attempt).
    await()
        .atMost(WITHIN)
        .until(
            () ->
                lb.of("attempt").stream()
                        .filter(e -> e.detail() == AttemptResult.HELD_ELSEWHERE)
                        .count()
                    >= 2);

    held.close();

    assertThat(seen.get(60, TimeUnit.SECONDS)).containsExactly("1234ms", "4321ms");
    assertThat(b.isLeader()).isTrue();
  }

  /**
   * The statement that waits also takes the fencing token once the lock is granted (and restores
   * the timeouts), so the takeover runs no statement of its own before the task: the term's token
   * comes from the wait, and the session ran nothing else.
   */
  @Test
  void aGrantedWaitTakesTheTokenInTheSameStatement(TestDatabase db) throws Exception {
    Recorded w = waitingStandby(db, db.dataSource(), "wait-token");

    w.held().close();

    await().atMost(WITHIN).until(w.standby()::isLeader);
    String session =
        w.calls().stream().filter(c -> c.startsWith("execute wait")).findFirst().orElseThrow();
    String on = session.substring(session.indexOf('@'));
    assertThat(w.calls().stream().filter(c -> c.endsWith(on)))
        .as("statements on the session that won, up to the task (which runs none)")
        .allMatch(c -> c.startsWith("execute wait"));
    assertThat(w.calls()).noneMatch(c -> c.startsWith("execute token"));
    FencingToken token = w.standby().currentTerm().orElseThrow().fencingToken();
    try (Connection c = db.connect();
        java.sql.Statement s = c.createStatement();
        java.sql.ResultSet rs = s.executeQuery("SELECT pg_current_xact_id()::text::bigint")) {
      rs.next();
      assertThat(token.xid()).isPositive().isLessThan(rs.getLong(1));
    }
    assertThat(token.timeline()).isPositive();
  }

  /**
   * While it waits, the standby's statement has assigned no transaction id (so it has written no
   * WAL either: the token's message and xid are only taken once granted), and it is recognisable in
   * {@code pg_stat_activity}: its {@code application_name} and the wait on an advisory lock.
   */
  @Test
  void aWaitingStandbyTakesNoXidAndWritesNothingWhileItWaits(TestDatabase db) throws Exception {
    Recorded w = waitingStandby(db, db.dataSource(), "wait-no-xid");
    await()
        .atMost(WITHIN)
        .until(
            () ->
                db.queryInts(
                            "SELECT count(*)::int FROM pg_stat_activity WHERE application_name ="
                                + " 'retsu-lock:wait-no-xid' AND wait_event_type = 'Lock' AND"
                                + " wait_event = 'advisory' AND state = 'active' AND query LIKE"
                                + " '/* retsu-lock standby wait */%'")
                        .get(0)
                    == 1);
    assertThat(
            db.queryInts(
                "SELECT count(*)::int FROM pg_stat_activity WHERE application_name LIKE"
                    + " '%wait-no-xid%' AND backend_xid IS NOT NULL"))
        .containsExactly(0);
    w.held().close();
    await().atMost(WITHIN).until(w.standby()::isLeader);
  }

  /**
   * A waiting standby's statement holds a snapshot (its {@code backend_xmin}), so it holds back
   * VACUUM's horizon while it waits; each re-arm after {@code waitTimeout} starts a new statement
   * with a new snapshot, so the horizon it holds is never older than {@code waitTimeout}. Breaking
   * the re-arm (a wait without {@code lock_timeout}) keeps the first snapshot and fails this test.
   */
  @Test
  void aWaitingStandbyHoldsTheHorizonBackAtMostOneWaitTimeout(TestDatabase db) throws Exception {
    LockKey key = TestKeys.next();
    track(AdvisoryLock.of(db.dataSource(), key).tryAcquire().orElseThrow());
    LeaderLoop standby =
        track(
            candidate(db.dataSource(), key, "wait-horizon")
                .takeover(TakeoverMode.WAIT)
                .waitTimeout(Duration.ofMillis(500))
                .build());
    standby.start(ctx -> {});
    String xmin =
        "SELECT coalesce(max(backend_xmin::text::int), 0) FROM pg_stat_activity WHERE"
            + " application_name = 'retsu-lock:wait-horizon' AND wait_event = 'advisory'";
    await().atMost(WITHIN).until(() -> db.queryInts(xmin).get(0) > 0);
    int first = db.queryInts(xmin).get(0);
    // Transactions elsewhere move the cluster's next xid on; the waiting statement's snapshot
    // stays behind them until its wait is re-armed, then it is taken after them.
    int next = 0;
    for (int i = 0; i < 5; i++) {
      next = db.queryInts("SELECT pg_current_xact_id()::text::int").get(0);
    }
    int taken = next;
    // Within a few re-arms of the 500 ms waitTimeout, far less than the client-side bound that
    // would otherwise end a wait whose lock_timeout was lost (about 10 s here).
    await()
        .atMost(Duration.ofSeconds(5))
        .pollInterval(Duration.ofMillis(20))
        .until(() -> db.queryInts(xmin).get(0) > taken);
    assertThat(first).isLessThanOrEqualTo(taken);
    assertThat(standby.isLeader()).isFalse();
  }

  /**
   * In pgjdbc's simple query mode the combined statement is sent as text: the takeover works the
   * same, with the token from the wait.
   */
  @Test
  void aWaitingStandbyInSimpleQueryModeTakesOverWithTheTokenOfItsWait(TestDatabase db)
      throws Exception {
    PGSimpleDataSource simple = db.dataSource();
    simple.setPreferQueryMode(PreferQueryMode.SIMPLE);
    assertTakesOverWithTheTokenOfItsWait(db, simple, "wait-simple");
  }

  /**
   * With {@code prepareThreshold=0} (what pgjdbc needs behind a transaction pooler) the takeover
   * works the same, with the token from the wait.
   */
  @Test
  void aWaitingStandbyWithoutServerSideStatementsTakesOverWithTheTokenOfItsWait(TestDatabase db)
      throws Exception {
    PGSimpleDataSource unprepared = db.dataSource();
    unprepared.setPrepareThreshold(0);
    assertTakesOverWithTheTokenOfItsWait(db, unprepared, "wait-unprepared");
  }

  private void assertTakesOverWithTheTokenOfItsWait(
      TestDatabase db, javax.sql.DataSource source, String id) throws Exception {
    Recorded w = waitingStandby(db, source, id);

    w.held().close();

    await().atMost(WITHIN).until(w.standby()::isLeader);
    assertThat(w.calls()).noneMatch(c -> c.startsWith("execute token"));
    assertThat(w.standby().currentTerm().orElseThrow().fencingToken().xid()).isPositive();
  }

  /** A key held elsewhere, and a WAIT standby for it whose statements are recorded. */
  private record Recorded(AdvisoryLockLease held, LeaderLoop standby, List<String> calls) {}

  /** Starts a WAIT standby on a key held elsewhere; returns once its wait statement runs. */
  private Recorded waitingStandby(TestDatabase db, javax.sql.DataSource source, String id) {
    LockKey key = TestKeys.next();
    AdvisoryLockLease held =
        track(AdvisoryLock.of(db.dataSource(), key).tryAcquire().orElseThrow());
    List<String> calls = new CopyOnWriteArrayList<>();
    LeaderLoop standby =
        track(
            candidate(recordingSource(source, calls), key, id)
                .takeover(TakeoverMode.WAIT)
                .waitTimeout(Duration.ofSeconds(30))
                .build());
    standby.start(LeaderContext::ensureLeader);
    await().atMost(WITHIN).until(() -> calls.stream().anyMatch(c -> c.startsWith("execute wait")));
    return new Recorded(held, standby, calls);
  }

  /**
   * Records, per session, which statements are described ({@code getMetaData()} before running) and
   * which are run: "describe token@3", "execute wait@3". Every call reaches the real driver.
   */
  private static javax.sql.DataSource recordingSource(
      javax.sql.DataSource target, List<String> calls) {
    AtomicInteger sessions = new AtomicInteger();
    return new DelegatingDataSource(target) {
      @Override
      public Connection getConnection() throws SQLException {
        Connection real = super.getConnection();
        String on = "@" + sessions.incrementAndGet();
        return (Connection)
            Proxy.newProxyInstance(
                WaitTakeoverIntegrationTest.class.getClassLoader(),
                new Class<?>[] {Connection.class},
                (proxy, method, args) -> {
                  Object result = invoke(real, method, args);
                  if (method.getName().equals("prepareStatement")
                      && args[0] instanceof String sql) {
                    String kind =
                        sql.contains("pg_advisory_lock(")
                            ? "wait"
                            : sql.contains("retsu-lock-fence") ? "token" : null;
                    if (kind != null) {
                      return recording((PreparedStatement) result, kind + on, calls);
                    }
                  }
                  return result;
                });
      }
    };
  }

  private static PreparedStatement recording(
      PreparedStatement real, String what, List<String> calls) {
    return (PreparedStatement)
        Proxy.newProxyInstance(
            WaitTakeoverIntegrationTest.class.getClassLoader(),
            new Class<?>[] {PreparedStatement.class},
            (proxy, method, args) -> {
              switch (method.getName()) {
                case "getMetaData" -> calls.add("describe " + what);
                case "executeQuery", "execute" -> calls.add("execute " + what);
                default -> {
                  // not recorded
                }
              }
              return invoke(real, method, args);
            });
  }

  private static Object invoke(Object target, Method method, Object[] args) throws Throwable {
    try {
      return method.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  @Test
  void closeAbortsAWaitThatWouldBlockForAnHour(TestDatabase db) throws Exception {
    LockKey key = TestKeys.next();
    AdvisoryLockLease held =
        track(AdvisoryLock.of(db.dataSource(), key).tryAcquire().orElseThrow());
    LeaderLoop b =
        candidate(db.dataSource(), key, "wait-c")
            .takeover(TakeoverMode.WAIT)
            .waitTimeout(Duration.ofHours(1))
            .build();
    CompletableFuture<Boolean> interruptedAfterRun = new CompletableFuture<>();
    Thread runner =
        new Thread(
            () -> {
              b.run(ctx -> {});
              interruptedAfterRun.complete(Thread.currentThread().isInterrupted());
            },
            "retsu-lock-test-waiter");
    runner.start();
    await().atMost(WITHIN).until(() -> db.clientSessions("retsu-lock:wait-c") == 1);

    b.close();

    // run() returned, and close() did not leave the caller's thread interrupted.
    assertThat(interruptedAfterRun.get(10, TimeUnit.SECONDS)).isFalse();
    await().atMost(WITHIN).until(() -> db.clientSessions("retsu-lock:wait-c") == 0);
    assertThat(held.isHeld()).isTrue();
  }

  /**
   * Several WAIT standbys re-arming (every 100 ms) while the key is held: each keeps one session,
   * and when the lock is freed exactly one of them leads. Re-arming puts a standby at the back of
   * PostgreSQL's wait queue, so which one wins is whoever waits when the lock frees, not the first
   * to arrive: WAIT promises speed, not order.
   */
  @Test
  void severalWaitersReArmAndExactlyOneTakesOver(TestDatabase db) throws Exception {
    LockKey key = TestKeys.next();
    AdvisoryLockLease held = AdvisoryLock.of(db.dataSource(), key).tryAcquire().orElseThrow();
    List<RecordingListener> listeners = new ArrayList<>();
    List<LeaderLoop> waiters = new ArrayList<>();
    for (String id : List.of("wait-d1", "wait-d2", "wait-d3")) {
      RecordingListener l = new RecordingListener();
      listeners.add(l);
      LeaderLoop w =
          track(
              candidate(db.dataSource(), key, id)
                  .takeover(TakeoverMode.WAIT)
                  .waitTimeout(Duration.ofMillis(100))
                  .listener(l)
                  .build());
      waiters.add(w);
      w.start(ctx -> {});
    }
    await()
        .atMost(WITHIN)
        .until(() -> listeners.stream().allMatch(l -> l.of("attempt").size() >= 5));
    for (RecordingListener l : listeners) {
      assertThat(l.of("attempt"))
          .allSatisfy(e -> assertThat(e.detail()).isEqualTo(AttemptResult.HELD_ELSEWHERE));
    }
    for (String id : List.of("wait-d1", "wait-d2", "wait-d3")) {
      assertThat(db.clientSessions("retsu-lock:" + id)).as(id).isEqualTo(1);
    }
    held.close();
    await().atMost(WITHIN).until(() -> waiters.stream().anyMatch(LeaderLoop::isLeader));
    // The others keep waiting (they re-armed at least once more) and never lead meanwhile.
    int[] before = listeners.stream().mapToInt(l -> l.of("attempt").size()).toArray();
    await()
        .atMost(WITHIN)
        .until(
            () -> {
              for (int i = 0; i < listeners.size(); i++) {
                if (!waiters.get(i).isLeader()
                    && listeners.get(i).of("attempt").size() < before[i] + 2) {
                  return false;
                }
              }
              return true;
            });
    assertThat(waiters.stream().filter(LeaderLoop::isLeader)).hasSize(1);
    assertThat(listeners.stream().mapToLong(l -> l.acquired().size()).sum()).isEqualTo(1);
  }

  /**
   * The orphaned waiter: a waiting standby whose network vanished is granted the lock when the
   * leader leaves. Its client never learns, so nobody leads until PostgreSQL notices the dead
   * session; the waiter's server-side bounds make that happen, and another candidate takes over.
   */
  @Test
  void blackholedWaiterThatIsGrantedTheLockLosesItAndAnotherCandidateTakesOver(TestDatabase db)
      throws Exception {
    // Bound by the server's keepalive (11 s) and the orphan's own read (17 s): half a minute, so
    // it runs in the full fault run (-Pfaults-full) and not in every build.
    Assumptions.assumeTrue(FaultModes.FULL, "runs with -Pfaults-full");
    LockKey key = TestKeys.next();
    FaultProxy proxy = track(FaultProxy.inFrontOf(db.jdbcUrl()));
    LeaderLoop leader = track(candidate(db.dataSource(), key, "orph-leader").build());
    leader.start(ctx -> {});
    await().atMost(WITHIN).until(leader::isLeader);

    PGSimpleDataSource viaProxy = db.dataSource();
    viaProxy.setUrl(proxy.rewrite(db.jdbcUrl()));
    RecordingListener lw = new RecordingListener();
    LeaderLoop waiter =
        track(
            candidate(viaProxy, key, "orph-waiter")
                .takeover(TakeoverMode.WAIT)
                // Longer than the server's keepalive bound (11 s), short enough that the orphan's
                // own read gives up (wait + round trip, 17 s) soon after its link heals.
                .waitTimeout(Duration.ofSeconds(15))
                .timing(
                    FailoverTiming.DEFAULT
                        .withHeartbeatInterval(Duration.ofMillis(100))
                        .withRoundTripTimeout(Duration.ofSeconds(2)))
                .listener(lw)
                .build());
    waiter.start(ctx -> {});
    // In its wait on the server, not merely connected: a blackhole that caught the session still
    // arming (its name is visible from the startup packet) would leave no wait to be granted, and
    // every new session of the waiter would be blackholed too.
    await().atMost(WITHIN).until(() -> db.waitingForAdvisoryLocks("retsu-lock:orph-waiter") == 1);
    int waiterPid =
        db.queryInts(
                "SELECT pid FROM pg_stat_activity WHERE application_name = 'retsu-lock:orph-waiter'")
            .get(0);

    proxy.blackhole(); // the waiter's host drops off the network
    long released = System.nanoTime();
    leader.close(); // PostgreSQL grants the lock to the (orphaned) waiting backend

    await()
        .atMost(WITHIN)
        .until(() -> db.advisoryLockHolders().contains(waiterPid)); // the hazard is real
    LeaderLoop rescuer = track(candidate(db.dataSource(), key, "orph-rescuer").build());
    AtomicLong rescued = new AtomicLong();
    rescuer.start(ctx -> rescued.compareAndSet(0, System.nanoTime()));

    await().atMost(WITHIN).until(() -> rescued.get() != 0);
    assertThat(db.backendExists(waiterPid)).isFalse();
    // Only now can the orphan hear anything: heal its link and let its wait end. Whatever it then
    // reads (the grant, or the end of its session), it must never act as leader.
    int attemptsBefore = lw.of("attempt").size();
    proxy.heal();
    await().atMost(WITHIN).until(() -> lw.of("attempt").size() > attemptsBefore);
    assertThat(lw.acquired()).as("the orphan never acted as leader").isEmpty();
    assertThat(rescuer.isLeader()).isTrue();
    record(
        "orphaned-waiter-recovery-ms (kernel drops: " + proxy.kernelDrops() + ")",
        (rescued.get() - released) / 1e6);
  }

  private static void record(String what, double millis) throws java.io.IOException {
    Path out = Path.of("target", "failover-measurements.txt");
    Files.writeString(
        out,
        String.format("%s %s %.1f%n", java.time.Instant.now(), what, millis),
        StandardOpenOption.CREATE,
        StandardOpenOption.APPEND);
  }
}
