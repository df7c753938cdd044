package dev.retsu.lock;

import dev.retsu.lock.internal.PgSession;
import dev.retsu.lock.internal.SessionTerminator;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The standing session of a {@link TakeoverMode#WAIT} standby: it blocks in {@code
 * pg_advisory_lock} under {@code lock_timeout}, so PostgreSQL grants the lock the moment the
 * holder's session ends. Waits are long (minutes by default) because each re-arm costs the server
 * an ERROR line in its log and each wait one deadlock check; the client's socket carries the same
 * keepalives as the server's side, so a blocked client still notices a dead server within the
 * keepalive bound. Each wait is one statement that first checks, like {@code tryAcquire}, that the
 * server is a primary and that this backend does not already hold the key (a transaction-mode
 * pooler shares backends; a plain re-entrant lock there would make two leaders). The session
 * carries the leader's server bounds from the start, has its own {@code statement_timeout} (a
 * role's shorter one cannot cancel the wait), is never returned to a pool, and {@link #close()}
 * aborts a wait in progress. Re-arming after {@code lock_timeout} puts the waiter at the back of
 * PostgreSQL's wait queue. Thread-safe: {@link #await()} from one thread, {@link #close()} from
 * any.
 */
final class LockWaiter implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(LockWaiter.class);

  private final AdvisoryLock lock;
  private final Connection conn;
  private final int pid;
  private final String database;
  private final List<String> applied;
  private final String marker;
  private final Duration waitTimeout;
  private final String originalLockTimeout;
  private final String originalStatementTimeout;
  private final ReentrantLock io = new ReentrantLock();
  private final AtomicBoolean open = new AtomicBoolean(true);

  /** Whether the last wait ended in lock_timeout (guarded by io). */
  private boolean timedOut;

  private LockWaiter(
      AdvisoryLock lock,
      Connection conn,
      int pid,
      String database,
      List<String> applied,
      String marker,
      Duration waitTimeout,
      String originalLockTimeout,
      String originalStatementTimeout) {
    this.lock = lock;
    this.conn = conn;
    this.pid = pid;
    this.database = database;
    this.applied = applied;
    this.marker = marker;
    this.waitTimeout = waitTimeout;
    this.originalLockTimeout = originalLockTimeout;
    this.originalStatementTimeout = originalStatementTimeout;
  }

  /** Opens the waiting session, refusing a hot standby. */
  static LockWaiter open(AdvisoryLock lock, Duration waitTimeout) {
    Connection conn = lock.borrow();
    String marker = AdvisoryLock.newMarker();
    boolean ok = false;
    try {
      lock.prepare(conn);
      int pid;
      String database;
      List<String> applied;
      String lockTimeout;
      String statementTimeout;
      try (PreparedStatement ps =
          conn.prepareStatement(
              "SELECT w.*, pg_catalog.current_setting('lock_timeout'),"
                  + " pg_catalog.current_setting('statement_timeout'),"
                  + " pg_catalog.set_config('lock_timeout', ?::text, false),"
                  + " pg_catalog.set_config('statement_timeout', '0', false) FROM ("
                  + SessionSql.prepareWaiter()
                  + ") w")) {
        ps.setString(1, waitTimeout.toMillis() + "ms");
        ps.setString(lock.bindSettings(conn, ps, 2), marker);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          pid = rs.getInt(1);
          lock.refuseUnsafe(pid, rs.getBoolean(2), false);
          applied = lock.applied(rs.getArray(3));
          database = rs.getString(4);
          lockTimeout = rs.getString(6);
          statementTimeout = rs.getString(7);
        }
      }
      if (PgSession.describesAhead(conn)) {
        describeFencingToken(lock, conn);
      }
      if (!lock.clientKeepalives(conn)) {
        LOG.debug(
            "{} Client keepalives unavailable; a dead server is noticed after waitTimeout",
            lock.context());
      }
      LockWaiter w =
          new LockWaiter(
              lock,
              conn,
              pid,
              database,
              applied,
              marker,
              waitTimeout,
              lockTimeout,
              statementTimeout);
      ok = true;
      return w;
    } catch (SQLException e) {
      throw lock.failed("Opening a waiting session failed", e);
    } finally {
      if (!ok) {
        SessionTerminator.endSession(lock.dataSource(), conn, true, lock.context());
      }
    }
  }

  /**
   * Has the server parse the fencing-token statement on this session now, without running it (no
   * xid is taken, nothing is written). The token is the first statement a granted waiter runs, and
   * on a session that never ran it the server looks up every function and type it names in its
   * catalogs, and the driver parses it for the first time: in the failover benchmark that made the
   * token's round trip at a takeover about twice as slow. pgjdbc keeps the described statement on
   * the session, so the token's run at the grant skips the parse. Done once per waiting session,
   * and only where {@link PgSession#describesAhead} allows it.
   *
   * <p>Only a lost session fails the waiter's open. Any other failure leaves the statement to be
   * parsed at the grant, as before: behind a transaction pooler with server-side statements on, the
   * name pgjdbc picks may already exist on a shared backend (42P05), and the wait's own check then
   * refuses that backend with {@code POOLER_DETECTED}.
   */
  private static void describeFencingToken(AdvisoryLock lock, Connection conn) throws SQLException {
    try (PreparedStatement ps = conn.prepareStatement(SessionSql.fencingToken())) {
      ps.setString(1, "");
      ps.getMetaData();
    } catch (SQLException e) {
      if (Diagnostics.isSessionLost(e.getSQLState())) {
        throw e;
      }
      LOG.debug(
          "{} Describing the fencing token's statement failed (SQLState {}); it is parsed when"
              + " the lock is granted: {}",
          lock.context(),
          e.getSQLState(),
          e.toString());
    }
  }

  /**
   * Waits up to {@code waitTimeout} for the lock.
   *
   * @return the lease once granted; empty when the wait timed out (call again to re-arm)
   * @throws UnsafeSessionException on a hot standby or a shared backend (the session is ended)
   * @throws AdvisoryLockException if the session failed, was closed or the thread was interrupted
   *     (the session is ended; an interrupt stays set)
   */
  Optional<AdvisoryLockLease> await() {
    io.lock();
    try {
      if (!open.get()) {
        throw new AdvisoryLockException(
            "The waiter is closed", lock.key(), lock.candidateId(), null);
      }
      int granted;
      boolean inRecovery;
      boolean alreadyHeld;
      boolean locked;
      try {
        conn.setNetworkTimeout(
            AdvisoryLock.DIRECT, (int) (waitTimeout.toMillis() + lock.timeoutMillis()));
        try (PreparedStatement ps = conn.prepareStatement(SessionSql.waitLock(lock.key()))) {
          ps.setString(1, originalLockTimeout);
          ps.setString(2, originalStatementTimeout);
          int next = lock.key().bindArguments(ps, 3);
          lock.key().bindLocks(ps, next);
          try (ResultSet rs = ps.executeQuery()) {
            rs.next();
            granted = rs.getInt(1);
            inRecovery = rs.getBoolean(2);
            alreadyHeld = rs.getBoolean(3);
            locked = rs.getBoolean(4);
          }
        }
      } catch (SQLException e) {
        if ("55P03".equals(e.getSQLState()) && open.get()) {
          timedOut = true;
          return Optional.empty(); // lock_timeout: nobody released it yet; re-arm
        }
        close();
        throw lock.failed("Waiting for the lock failed", e);
      }
      boolean afterTimeout = timedOut;
      timedOut = false;
      if (granted != pid) {
        discard();
        throw Refusals.pidChanged(pid, granted, lock.key(), lock.candidateId());
      }
      if (alreadyHeld && afterTimeout && !inRecovery) {
        // PostgreSQL can grant the lock in the instant lock_timeout fires: the statement fails
        // with 55P03 and the session keeps the lock. Not a shared backend, but not provably ours
        // either, so end the session (which frees the lock if it is ours) and let the standby
        // open a new one; this candidate never acts on it. A backend that still holds the key on
        // the next session's first wait is refused as shared, as before.
        discard();
        throw new AdvisoryLockException(
            "The lock was granted as the previous wait timed out; the waiting session was ended,"
                + " which releases it, and the standby waits again on a new one",
            lock.key(),
            lock.candidateId(),
            null);
      }
      if (inRecovery || alreadyHeld || !locked) {
        discard();
        lock.refuseUnsafe(granted, inRecovery, alreadyHeld);
        throw new AdvisoryLockException(
            "The wait returned without the lock", lock.key(), lock.candidateId(), null);
      }
      if (!open.compareAndSet(true, false)) {
        // Closed while the grant arrived: end the session, which releases the lock.
        SessionTerminator.endSession(lock.dataSource(), conn, false, lock.context());
        throw new AdvisoryLockException(
            "The waiter was closed", lock.key(), lock.candidateId(), null);
      }
      if (Thread.currentThread().isInterrupted()) {
        SessionTerminator.endSession(lock.dataSource(), conn, false, lock.context());
        throw new AdvisoryLockException(
            "Interrupted when the lock was granted; the session was ended",
            lock.key(),
            lock.candidateId(),
            new InterruptedException());
      }
      try {
        conn.setNetworkTimeout(AdvisoryLock.DIRECT, 0);
      } catch (SQLException e) {
        SessionTerminator.endSession(lock.dataSource(), conn, false, lock.context());
        throw lock.failed("Granted, but the session failed right after", e);
      }
      LOG.debug("{} Lock granted to waiting backend pid {}", lock.context(), pid);
      return Optional.of(
          new AdvisoryLockLease(lock, conn, pid, Instant.now(), applied, database, marker));
    } finally {
      io.unlock();
    }
  }

  /** The waiting session's connection (tests read its socket options). */
  Connection connection() {
    return conn;
  }

  /**
   * Ends a refused session without sending it anything: its backend may be shared with another
   * client, whose lock a terminate statement would end.
   */
  private void discard() {
    if (open.compareAndSet(true, false)) {
      SessionTerminator.endSession(lock.dataSource(), conn, true, lock.context());
    }
  }

  /** Ends the waiting session (aborting a wait in progress). Idempotent; never throws. */
  @Override
  public void close() {
    if (!open.compareAndSet(true, false)) {
      return;
    }
    SessionTerminator.endSession(lock.dataSource(), conn, io, lock.context());
  }
}
