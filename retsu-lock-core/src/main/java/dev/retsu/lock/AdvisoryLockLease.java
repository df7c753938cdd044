package dev.retsu.lock;

import dev.retsu.lock.internal.LeaseConnections;
import dev.retsu.lock.internal.PgSessionWaiter;
import dev.retsu.lock.internal.SessionTerminator;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Proof that one database session holds an advisory lock. The lease owns that session's connection
 * for its whole life:
 *
 * <ul>
 *   <li>leader work runs on it, through {@link #connection()} or {@link #withConnection}, so the
 *       work and the lock can never drift apart onto different sessions;
 *   <li>{@link #verify()} and {@link #isHeld()} prove in one round trip that the session is alive,
 *       still holds the lock, and is the same backend as at acquisition;
 *   <li>{@link #close()} ends the physical session (never returns it to a pool), which releases the
 *       lock on the server at once. It is idempotent, thread-safe, and safe on a dead connection;
 *       when another thread is inside a call on the session, the connection is aborted.
 * </ul>
 *
 * <p>Thread-safe. Round trips on the session are serialised by a {@link ReentrantLock} (no {@code
 * synchronized}, so virtual threads do not pin).
 */
public final class AdvisoryLockLease implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(AdvisoryLockLease.class);

  private final AdvisoryLock lock;
  private final Connection session;
  private final Connection view;
  private final int backendPid;
  private final Instant acquiredAt;
  private final List<String> sessionSettings;
  private final ReentrantLock io = new ReentrantLock();
  private final AtomicBoolean open = new AtomicBoolean(true);
  private final String checkSql;

  AdvisoryLockLease(
      AdvisoryLock lock,
      Connection session,
      int backendPid,
      Instant acquiredAt,
      List<String> sessionSettings) {
    this.lock = lock;
    this.session = session;
    this.backendPid = backendPid;
    this.acquiredAt = acquiredAt;
    this.sessionSettings = sessionSettings;
    this.view = LeaseConnections.guard(session, open::get, lock.context());
    this.checkSql =
        "SELECT pg_backend_pid(), EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory'"
            + " AND l.granted AND l.pid = pg_backend_pid() AND l.database = (SELECT oid FROM"
            + " pg_database WHERE datname = current_database()) AND "
            + lock.key().pgLocksPredicate("l")
            + ")";
  }

  /**
   * Returns the lock key.
   *
   * @return the key
   */
  public LockKey key() {
    return lock.key();
  }

  /**
   * Returns the candidate id.
   *
   * @return the id
   */
  public String candidateId() {
    return lock.candidateId();
  }

  /**
   * Returns the backend pid of the session that holds the lock. Operators end the lease with {@code
   * SELECT pg_terminate_backend(pid)}.
   *
   * @return the pid recorded at acquisition
   */
  public int backendPid() {
    return backendPid;
  }

  /**
   * Returns when the lock was taken (wall clock).
   *
   * @return the instant
   */
  public Instant acquiredAt() {
    return acquiredAt;
  }

  /**
   * Returns the session settings the server accepted at acquisition.
   *
   * @return setting names
   */
  public List<String> sessionSettings() {
    return sessionSettings;
  }

  /**
   * Returns whether {@link #close()} has not been called yet. An open lease may still have lost its
   * session; {@link #verify()} finds out.
   *
   * @return true until closed
   */
  public boolean isOpen() {
    return open.get();
  }

  /**
   * Returns the lease's connection, the only one leader work should use. Its {@code close()} does
   * nothing (the lease owns the session), {@code abort()} is refused, and once the lease is closed
   * every call fails with SQLState 08003.
   *
   * @return a view of the lease's connection
   */
  public Connection connection() {
    return view;
  }

  /**
   * Runs work on the lease's connection, serialised with the lease's own round trips.
   *
   * @param work the work
   * @param <T> its result type
   * @return the work's result
   * @throws SQLException from the work; SQLState 08003 when the lease is closed
   */
  public <T> T withConnection(SqlFunction<T> work) throws SQLException {
    Objects.requireNonNull(work, "work");
    io.lock();
    try {
      if (!open.get()) {
        throw new SQLException("The lease is closed " + lock.context(), "08003");
      }
      return work.apply(view);
    } finally {
      io.unlock();
    }
  }

  /**
   * Proves, in one round trip bounded by the lock's round-trip timeout, that this session is alive,
   * is the backend recorded at acquisition, and holds the lock.
   *
   * @throws LeadershipLostException if not: {@link LossReason#SESSION_LOST} (the SQLException is
   *     the cause), {@link LossReason#LOCK_NOT_HELD}, {@link LossReason#POOLER_DETECTED} (an {@link
   *     UnsafeSessionException}), or {@link LossReason#CLOSED}. The lease stays open; close it.
   */
  public void verify() {
    verify(lock.timeoutMillis());
  }

  /** {@link #verify()} with a network timeout for this one round trip. */
  void verify(int timeoutMillis) {
    io.lock();
    try {
      if (!open.get()) {
        throw new LeadershipLostException(
            LossReason.CLOSED, "The lease is closed", lock.key(), lock.candidateId(), null);
      }
      int pid;
      boolean held;
      try {
        int previous = session.getNetworkTimeout();
        session.setNetworkTimeout(AdvisoryLock.DIRECT, Math.max(1, timeoutMillis));
        try (PreparedStatement ps = session.prepareStatement(checkSql)) {
          lock.key().bindLocks(ps, 1);
          try (ResultSet rs = ps.executeQuery()) {
            rs.next();
            pid = rs.getInt(1);
            held = rs.getBoolean(2);
          }
        }
        session.setNetworkTimeout(AdvisoryLock.DIRECT, previous);
      } catch (SQLException e) {
        throw new LeadershipLostException(
            LossReason.SESSION_LOST,
            "The ownership check failed (SQLState " + e.getSQLState() + ")",
            lock.key(),
            lock.candidateId(),
            e);
      }
      if (pid != backendPid) {
        throw new UnsafeSessionException(
            LossReason.POOLER_DETECTED,
            "The backend changed from pid "
                + backendPid
                + " to "
                + pid
                + ": a transaction-mode pooler is in between",
            lock.key(),
            lock.candidateId());
      }
      if (!held) {
        throw new LeadershipLostException(
            LossReason.LOCK_NOT_HELD,
            "Backend " + pid + " is alive but no longer holds the lock",
            lock.key(),
            lock.candidateId(),
            null);
      }
    } finally {
      io.unlock();
    }
  }

  /**
   * Waits up to {@code millis} on the session's socket, returning early when the server ends the
   * session. Falls back to a plain wait when pgjdbc is not there.
   *
   * @return false if no socket wait was possible (the caller should sleep instead)
   * @throws SQLException when the session ends or breaks while waiting
   */
  boolean awaitSessionEvent(int millis) throws SQLException {
    if (!PgSessionWaiter.AVAILABLE) {
      return false;
    }
    io.lock();
    try {
      if (!open.get()) {
        throw new SQLException("The lease is closed " + lock.context(), "08003");
      }
      int notifications = PgSessionWaiter.await(session, millis);
      if (notifications > 0) {
        LOG.debug(
            "{} Dropped {} notifications that arrived on the lease's session",
            lock.context(),
            notifications);
      }
      return notifications >= 0;
    } finally {
      io.unlock();
    }
  }

  /**
   * Returns whether {@link #verify()} succeeds; the reason for a {@code false} is logged at DEBUG.
   *
   * @return true if this session provably still holds the lock
   */
  public boolean isHeld() {
    try {
      verify();
      return true;
    } catch (LeadershipLostException e) {
      LOG.debug("{} Lease no longer held: {}", lock.context(), e.getMessage());
      return false;
    }
  }

  /**
   * Ends the session, which releases the lock on the server at once. Never returns the session to a
   * pool. Idempotent; never throws.
   */
  @Override
  public void close() {
    if (!open.compareAndSet(true, false)) {
      return;
    }
    SessionTerminator.endSession(lock.dataSource(), session, io, lock.context());
    LOG.debug("{} Lease closed; session of backend pid {} ended", lock.context(), backendPid);
  }

  @Override
  public String toString() {
    return "AdvisoryLockLease"
        + lock.context()
        + "{pid="
        + backendPid
        + ", acquiredAt="
        + acquiredAt
        + (open.get() ? "" : ", closed")
        + "}";
  }
}
