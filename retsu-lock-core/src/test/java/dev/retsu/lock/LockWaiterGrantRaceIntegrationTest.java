package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.fakes.DelegatingDataSource;
import dev.retsu.lock.fakes.RecordingListener;
import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.fakes.TestLoops;
import dev.retsu.lock.internal.session.KeySql;
import dev.retsu.lock.internal.session.LockWaiter;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * PostgreSQL can grant a waiting session the lock in the instant {@code lock_timeout} fires: the
 * wait fails with 55P03 and the session keeps the lock. The next wait's "already held" check then
 * sees our own grant. That is no shared backend (no pooler), so it must not fail the standby as
 * POOLER_DETECTED; but the lock is not provably ours either, so the waiter ends its session (which
 * frees the lock) and the standby contends again on a new one.
 *
 * <p>The race itself cannot be timed; its outcome can: after a wait timed out, the test takes the
 * key on the waiting session's own connection, exactly the state the race leaves behind.
 */
@ExtendWith(PostgresExtension.class)
class LockWaiterGrantRaceIntegrationTest {

  private static final Duration WITHIN = Duration.ofSeconds(30);
  private static final Duration SHORT_WAIT = Duration.ofMillis(200);

  private final List<AutoCloseable> closeables = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (int i = closeables.size() - 1; i >= 0; i--) {
      closeables.get(i).close();
    }
  }

  private static List<Integer> holders(TestDatabase db, LockKey key) throws SQLException {
    return db.queryInts(
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND "
            + KeySql.pgLocksPredicate(key, "pg_locks"),
        TestKeys.lockArguments(key));
  }

  private static void lockOn(Connection c, LockKey key) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute("SELECT pg_advisory_lock(" + TestKeys.sqlLiteral(key) + ")");
    }
  }

  private static int pidOf(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        var rs = s.executeQuery("SELECT pg_backend_pid()")) {
      rs.next();
      return rs.getInt(1);
    }
  }

  @Test
  void aGrantKeptAfterLockTimeoutEndsTheWaitingSessionAndIsNoPoolerVerdict(TestDatabase db)
      throws Exception {
    LockKey key = TestKeys.next();
    AdvisoryLock lock = AdvisoryLock.builder(db.dataSource(), key).candidateId("race-w").build();
    AdvisoryLockLease holder = AdvisoryLock.of(db.dataSource(), key).tryAcquire().orElseThrow();
    closeables.add(holder);
    LockWaiter waiter = LockWaiter.open(lock.spec(), SHORT_WAIT);
    closeables.add(waiter);
    assertThat(waiter.await()).isEmpty(); // lock_timeout: the key is held elsewhere

    holder.close();
    int waiting = waiter.session().id().pid();
    // What a grant racing lock_timeout leaves behind: our waiting session holds the key.
    waiter
        .session()
        .call(
            c -> {
              lockOn(c, key);
              return null;
            });
    assertThat(holders(db, key)).containsExactly(waiting);

    assertThatThrownBy(waiter::await)
        .isExactlyInstanceOf(AdvisoryLockException.class)
        .hasMessageContaining("granted as the previous wait timed out");
    // The waiting session was ended, which released the key; the backend goes with it.
    await().atMost(WITHIN).until(() -> holders(db, key).isEmpty() && !db.backendExists(waiting));
  }

  /**
   * The same race under a {@link LeaderLoop} in WAIT: its standby opens a new waiting session and
   * leads; the loop is not FAILED. The data source hands the standby's first waiting session a
   * connection that takes the key itself just before its second wait, after the first timed out and
   * the holder let go.
   */
  @Test
  void aWaitLoopThatHitsTheRaceKeepsContendingAndLeads(TestDatabase db) throws Exception {
    LockKey key = TestKeys.next();
    AdvisoryLockLease holder = AdvisoryLock.of(db.dataSource(), key).tryAcquire().orElseThrow();
    closeables.add(holder);
    AtomicBoolean raced = new AtomicBoolean();
    DataSource racing = racingSource(db.dataSource(), key, holder, raced);
    RecordingListener listener = new RecordingListener();
    LeaderLoop loop =
        TestLoops.fast(LeaderLoop.builder(racing, key))
            .candidateId("race-loop")
            .takeover(TakeoverMode.WAIT)
            .waitTimeout(SHORT_WAIT)
            .listener(listener)
            .build();
    closeables.add(loop);
    loop.start(ctx -> ctx.ensureLeader());

    await().atMost(WITHIN).until(() -> loop.isLeader() || loop.state() != LeaderLoop.State.RUNNING);
    assertThat(raced).isTrue();
    assertThat(loop.failure()).isEmpty();
    assertThat(loop.state()).isEqualTo(LeaderLoop.State.RUNNING);
    assertThat(loop.isLeader()).isTrue();
    List<RecordingListener.Event> attempts = listener.of("attempt");
    // timed out, then the race's verdict: a plain failure, never the pooler's
    RecordingListener.Event failed =
        attempts.stream().filter(e -> e.detail() == AttemptResult.ERROR).findFirst().orElseThrow();
    assertThat(failed.error())
        .isExactlyInstanceOf(AdvisoryLockException.class)
        .isNotInstanceOf(UnsafeSessionException.class);
    assertThat(attempts.get(attempts.size() - 1).detail()).isEqualTo(AttemptResult.ACQUIRED);
    assertThat(holders(db, key)).containsExactly(loop.currentTerm().orElseThrow().backendPid());
  }

  /**
   * A data source whose first connection, when asked to prepare its second wait statement, first
   * has the holder let go and takes the key itself: the state a grant racing {@code lock_timeout}
   * leaves behind, at a moment the test chooses. Every other call goes to the real connection.
   */
  private static DataSource racingSource(
      DataSource target, LockKey key, AdvisoryLockLease holder, AtomicBoolean raced) {
    AtomicInteger borrowed = new AtomicInteger();
    return new DelegatingDataSource(target) {
      @Override
      public Connection getConnection() throws SQLException {
        Connection real = super.getConnection();
        if (borrowed.incrementAndGet() != 1) {
          return real;
        }
        AtomicInteger waits = new AtomicInteger();
        return (Connection)
            Proxy.newProxyInstance(
                LockWaiterGrantRaceIntegrationTest.class.getClassLoader(),
                new Class<?>[] {Connection.class},
                (proxy, method, args) -> {
                  if (method.getName().equals("prepareStatement")
                      && args[0] instanceof String sql
                      && sql.contains("pg_advisory_lock(")
                      && waits.incrementAndGet() == 2) {
                    holder.close();
                    lockOn(real, key);
                    raced.set(true);
                  }
                  try {
                    return method.invoke(real, args);
                  } catch (InvocationTargetException e) {
                    throw e.getCause();
                  }
                });
      }
    };
  }
}
