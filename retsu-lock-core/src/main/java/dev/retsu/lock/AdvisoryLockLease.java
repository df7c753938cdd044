package dev.retsu.lock;

import dev.retsu.lock.internal.PgSession;
import dev.retsu.lock.internal.SessionGuard;
import dev.retsu.lock.internal.SessionTerminator;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Proof that one database session holds an advisory lock. The lease owns that session's connection
 * for its whole life:
 *
 * <ul>
 *   <li>leader work runs on it, through {@link #connection()} or {@link #withConnection}, so the
 *       work and the lock can never drift apart onto different sessions. No object reachable from
 *       that connection (statements, result sets, metadata, {@code getConnection()}, {@code
 *       unwrap}) hands out the pooled handle or the physical session;
 *   <li>{@link #verify()} and {@link #isHeld()} prove in one round trip that the session is alive,
 *       still holds the lock, and is the same backend as at acquisition;
 *   <li>{@link #close()} ends the physical session (never returns it to a pool), which releases the
 *       lock on the server at once. It is idempotent, thread-safe, and safe on a dead connection;
 *       when another thread is inside a call on the session, the connection is aborted.
 * </ul>
 *
 * <p>Thread-safe. Every call on the session, through the view or the lease, is serialised by one
 * {@link ReentrantLock} (no {@code synchronized}, so virtual threads do not pin).
 */
public final class AdvisoryLockLease implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(AdvisoryLockLease.class);

  /** What the lease tells the term that owns it; every method is called with the I/O lock held. */
  interface Watcher {
    Watcher NONE = new Watcher() {};

    /** A statement on the session completed; it started at {@code startNanos}. */
    default void roundTrip(long startNanos) {}

    /** A call on the session failed with a session-lost SQLState. */
    default void sessionLost(SQLException e) {}

    /** SQL that may release session locks was sent (unlock functions, DISCARD). */
    default void unlockSuspected() {}
  }

  private final AdvisoryLock lock;
  private final Connection session;
  private final Connection view;
  private final int backendPid;
  private final Instant acquiredAt;
  private final List<String> sessionSettings;
  private final String database;
  private final String marker;
  private final ReentrantLock io = new ReentrantLock();
  private final AtomicBoolean open = new AtomicBoolean(true);
  private volatile Watcher watcher = Watcher.NONE;
  private volatile boolean droppedNotifications;

  /**
   * Whether anything but the library has used the session since the last full proof. At acquisition
   * the locking statement itself proved the lock and set the marker.
   */
  private boolean touched;

  /** How many proofs read pg_locks (guarded by io; read by tests). */
  private long fullProofs;

  AdvisoryLockLease(
      AdvisoryLock lock,
      Connection session,
      int backendPid,
      Instant acquiredAt,
      List<String> sessionSettings,
      String database,
      String marker) {
    this.lock = lock;
    this.session = session;
    this.backendPid = backendPid;
    this.acquiredAt = acquiredAt;
    this.sessionSettings = sessionSettings;
    this.database = database;
    this.marker = marker;
    this.view = SessionGuard.guard(session, new Hooks(), lock.context());
  }

  /** Routes the guarded graph's calls through the lease's I/O lock and to its watcher. */
  final class Hooks implements SessionGuard.Hooks {
    @Override
    public void enter() throws SQLException {
      io.lock();
      if (!open.get()) {
        io.unlock();
        throw closedException();
      }
      touched = true; // user code may have unlocked: the next proof reads pg_locks
    }

    @Override
    public void exit(long startNanos, boolean roundTrip, SQLException failure) {
      try {
        if (failure != null && Diagnostics.isSessionLost(failure.getSQLState())) {
          watcher.sessionLost(failure);
        } else if (failure == null && roundTrip) {
          watcher.roundTrip(startNanos);
        }
      } finally {
        io.unlock();
      }
    }

    @Override
    public void sql(String sql) {
      String s = sql.toLowerCase(Locale.ROOT);
      if (s.contains("unlock") || s.contains("discard")) {
        watcher.unlockSuspected();
      }
    }
  }

  private SQLException closedException() {
    return new SQLException("The lease is closed " + lock.context(), "08003");
  }

  void watch(Watcher w) {
    this.watcher = Objects.requireNonNull(w);
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
   * Returns the backend pid of the session that holds the lock.
   *
   * @return the pid
   */
  public int backendPid() {
    return backendPid;
  }

  /**
   * Returns the database the lock is in (advisory locks are per database).
   *
   * @return the database name
   */
  public String database() {
    return database;
  }

  /**
   * Returns when the lock was taken.
   *
   * @return the instant
   */
  public Instant acquiredAt() {
    return acquiredAt;
  }

  /**
   * Returns the session settings the server applied when the lock was taken.
   *
   * @return the setting names
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
   * nothing (the lease owns the session), {@code abort()} is refused, {@code unwrap} hands out
   * nothing but the view itself (SQLState 0A000 otherwise), and once the lease is closed every call
   * fails with SQLState 08003. The same holds for every statement, result set and metadata object
   * obtained from it.
   *
   * @return a view of the lease's connection
   */
  public Connection connection() {
    return view;
  }

  /**
   * Runs work on the lease's connection, with no other call on the session in between.
   *
   * @param work the work
   * @param <T> its result type
   * @return what the work returned
   * @throws SQLException what the work threw, or 08003 if the lease is closed
   */
  public <T> T withConnection(SqlFunction<T> work) throws SQLException {
    Objects.requireNonNull(work, "work");
    io.lock();
    try {
      if (!open.get()) {
        throw closedException();
      }
      return work.apply(view);
    } finally {
      io.unlock();
    }
  }

  /**
   * Proves, in one round trip bounded by the lock's round-trip timeout, that this session is alive,
   * is the backend recorded at acquisition, and holds the lock. Its cost does not grow with the
   * server's lock table while only the library has used the session since the last proof: a session
   * lock ends only with its session or by an unlock that session runs, so the same backend with the
   * marker set at acquisition intact is proof enough. After any call through {@link #connection()}
   * it reads {@code pg_locks} once. It also fails when {@code RESET ALL} or {@code DISCARD} cleared
   * the settings the lease set (the server would no longer bound a paused leader).
   *
   * @throws LeadershipLostException if not: {@link LossReason#SESSION_LOST} (the SQLException is
   *     the cause), {@link LossReason#LOCK_NOT_HELD}, {@link LossReason#POOLER_DETECTED}, or {@link
   *     LossReason#CLOSED}. The lease stays open; close it.
   * @throws AdvisoryLockException if the check could not run on a live session (for example inside
   *     a failed transaction): ownership is then unknown, not lost
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
      boolean full = touched;
      int pid;
      boolean held;
      boolean markerIntact;
      try {
        int previous = session.getNetworkTimeout();
        session.setNetworkTimeout(AdvisoryLock.DIRECT, Math.max(1, timeoutMillis));
        String sql = full ? SessionSql.ownership(lock.key()) : SessionSql.sameSession();
        try (PreparedStatement ps = session.prepareStatement(sql)) {
          int next = full ? lock.key().bindLocks(ps, 1) : 1;
          ps.setString(next, marker);
          try (ResultSet rs = ps.executeQuery()) {
            rs.next();
            pid = rs.getInt(1);
            held = !full || rs.getBoolean(2);
            markerIntact = rs.getBoolean(full ? 3 : 2);
          }
        }
        session.setNetworkTimeout(AdvisoryLock.DIRECT, previous);
      } catch (SQLException e) {
        if (Diagnostics.isSessionLost(e.getSQLState())) {
          throw new LeadershipLostException(
              LossReason.SESSION_LOST,
              "The ownership check failed (SQLState " + e.getSQLState() + ")",
              lock.key(),
              lock.candidateId(),
              e);
        }
        throw new AdvisoryLockException(
            "The ownership check could not run (SQLState " + e.getSQLState() + ")",
            lock.key(),
            lock.candidateId(),
            e);
      }
      if (pid != backendPid) {
        throw new LeadershipLostException(
            LossReason.POOLER_DETECTED,
            Refusals.pidChanged(backendPid, pid, lock.key(), lock.candidateId()).getMessage(),
            lock.key(),
            lock.candidateId(),
            null);
      }
      if (!held) {
        throw new LeadershipLostException(
            LossReason.LOCK_NOT_HELD,
            "Backend " + pid + " is alive but no longer holds the lock",
            lock.key(),
            lock.candidateId(),
            null);
      }
      if (!markerIntact) {
        // RESET ALL or DISCARD ran on the session: the server bounds the lease set are gone too.
        throw new LeadershipLostException(
            LossReason.LOCK_NOT_HELD,
            "Backend "
                + pid
                + " lost the session settings the lease set (RESET ALL or DISCARD ran on it), so"
                + " the server no longer bounds a paused leader; ending the term",
            lock.key(),
            lock.candidateId(),
            null);
      }
      touched = false;
      if (full) {
        fullProofs++;
      }
    } finally {
      io.unlock();
    }
  }

  /** How many ownership proofs have read {@code pg_locks} so far. */
  long fullProofs() {
    io.lock();
    try {
      return fullProofs;
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
    } catch (AdvisoryLockException e) {
      LOG.debug("{} Lease not proven held: {}", lock.context(), e.getMessage());
      return false;
    }
  }

  /**
   * What the socket shows, without a round trip. A call in progress on the session is waited for
   * (its answer is evidence too: a session-lost failure of it ends the term through the watcher),
   * but at most {@code maxWaitNanos}.
   *
   * @return the evidence, or null if the session stayed busy for {@code maxWaitNanos}
   */
  PgSession.Evidence probe(long maxWaitNanos) {
    try {
      if (!io.tryLock(Math.max(0, maxWaitNanos), TimeUnit.NANOSECONDS)) {
        return null;
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
    try {
      return open.get() ? PgSession.probe(session) : PgSession.Evidence.ENDED;
    } finally {
      io.unlock();
    }
  }

  /** Whether the session is free right now (no call in progress on another thread). */
  boolean tryLockIo() {
    return io.tryLock();
  }

  void unlockIo() {
    io.unlock();
  }

  /**
   * Whether a probe round trip now would leave a user's transaction as it is: false while
   * autocommit is off and no transaction has started (a statement would start one and take its
   * snapshot), or inside a failed transaction. Call with the I/O lock held.
   */
  boolean canProveNow() {
    try {
      PgSession.Transaction tx = PgSession.transaction(session);
      if (tx == PgSession.Transaction.FAILED) {
        return false;
      }
      return session.getAutoCommit() || tx == PgSession.Transaction.OPEN;
    } catch (SQLException e) {
      return true; // the check itself will report what is wrong with the session
    }
  }

  /**
   * Waits up to {@code millis} for anything on the session's socket; an SQLException means the
   * session ended. Notifications that arrive are consumed (the lease's session is not for LISTEN);
   * the first time per lease that happens is logged at WARN.
   *
   * @return false if this cannot wait on the socket (no pgjdbc, or inside a transaction)
   */
  boolean awaitSessionEvent(int millis) throws SQLException {
    io.lock();
    try {
      if (!open.get()) {
        throw closedException();
      }
      PGNotification[] notes = PgSession.await(session, millis);
      if (notes == null) {
        return false;
      }
      if (notes.length > 0 && !droppedNotifications) {
        droppedNotifications = true;
        LOG.warn(
            "{} Dropped a notification on channel {} that arrived on the lease's session: the"
                + " leader waits on this session, so LISTEN on it is not supported; use another"
                + " connection",
            lock.context(),
            notes[0].getName());
      }
      return true;
    } finally {
      io.unlock();
    }
  }

  /**
   * Puts the session back in autocommit with no transaction open, after user work: rolls back what
   * was left uncommitted.
   *
   * @return true if something had to be rolled back or autocommit turned back on
   */
  boolean restoreAutocommit() throws SQLException {
    io.lock();
    try {
      if (!open.get()) {
        return false;
      }
      if (!session.getAutoCommit()) {
        session.rollback();
        session.setAutoCommit(true);
        return true;
      }
      PgSession.Transaction tx = PgSession.transaction(session);
      if (tx == PgSession.Transaction.OPEN || tx == PgSession.Transaction.FAILED) {
        try (Statement s = session.createStatement()) {
          s.execute("ROLLBACK");
        }
        return true;
      }
      return false;
    } finally {
      io.unlock();
    }
  }

  /** Takes the term's fencing token on this session; checks the backend did not change. */
  FencingToken fencingToken() throws SQLException {
    io.lock();
    try {
      if (!open.get()) {
        throw closedException();
      }
      try (PreparedStatement ps = session.prepareStatement(SessionSql.fencingToken())) {
        ps.setString(1, lock.applicationName());
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          int pid = rs.getInt(4);
          if (pid != backendPid) {
            throw Refusals.pidChanged(backendPid, pid, lock.key(), lock.candidateId());
          }
          return new FencingToken(rs.getInt(2), rs.getLong(1));
        }
      }
    } finally {
      io.unlock();
    }
  }

  /**
   * Ends the session at once without writing to it (self-fencing: no socket write that could
   * block). Idempotent; never throws.
   */
  void abort() {
    if (open.compareAndSet(true, false)) {
      SessionTerminator.endSession(lock.dataSource(), session, true, lock.context());
      LOG.debug("{} Lease aborted; session of backend pid {} ended", lock.context(), backendPid);
    }
  }

  /**
   * Ends the physical session, which releases the lock on the server. Never returns it to a pool.
   * Idempotent; never throws.
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
        + ", database="
        + database
        + ", acquiredAt="
        + acquiredAt
        + (open.get() ? "" : ", closed")
        + "}";
  }
}
