package dev.retsu.lock;

import dev.retsu.lock.internal.session.LockSession;
import dev.retsu.lock.internal.session.ProofException;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
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
 * fair {@link java.util.concurrent.locks.ReentrantLock} (no {@code synchronized}, so virtual
 * threads do not pin).
 */
public final class AdvisoryLockLease implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(AdvisoryLockLease.class);

  private final AdvisoryLock lock;
  private final LockSession session;
  private final Connection view;
  private final Instant acquiredAt = Instant.now();

  AdvisoryLockLease(AdvisoryLock lock, LockSession session) {
    this.lock = lock;
    this.session = session;
    this.view = session.view(() -> !session.isOpen());
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
    return session.id().pid();
  }

  /**
   * Returns how the session that holds the lock reaches the server: directly, or through a proxy or
   * pooler, behind which only {@code idle_session_timeout} frees the lock of a holder that vanished
   * (see {@link ServerPath}).
   *
   * @return the path, as the statement that took the lock saw it
   */
  public ServerPath serverPath() {
    return session.id().route().path();
  }

  /**
   * Returns the database the lock is in (advisory locks are per database).
   *
   * @return the database name
   */
  public String database() {
    return session.id().database();
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
    return session.id().applied();
  }

  /**
   * Returns whether {@link #close()} has not been called yet. An open lease may still have lost its
   * session; {@link #verify()} finds out.
   *
   * @return true until closed
   */
  public boolean isOpen() {
    return session.isOpen();
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
    return session.call(c -> work.apply(view));
  }

  /**
   * Proves, in one round trip bounded by the lock's round-trip timeout, that this session is alive,
   * is the backend recorded at acquisition, and holds the lock. Its cost does not grow with the
   * server's lock table while only the library has used the session since the last proof: a session
   * lock ends only with its session or by an unlock that session runs, so the same backend with the
   * marker set at acquisition intact is proof enough. After any call through {@link #connection()}
   * it reads {@code pg_locks} once. When {@code RESET ALL} or {@code DISCARD} cleared the settings
   * the lease set (the server would no longer bound a paused holder), the same round trip applies
   * them again.
   *
   * @throws LeadershipLostException if not: {@link LossReason#SESSION_LOST} (the SQLException is
   *     the cause), {@link LossReason#LOCK_NOT_HELD}, {@link LossReason#POOLER_DETECTED}, or {@link
   *     LossReason#CLOSED}. The lease stays open; close it.
   * @throws AdvisoryLockException if the check could not run on a live session (for example inside
   *     a failed transaction): ownership is then unknown, not lost
   */
  public void verify() {
    if (!session.isOpen()) {
      throw new LeadershipLostException(
          LossReason.CLOSED, "The lease is closed", key(), candidateId(), null);
    }
    try {
      session.prove();
    } catch (ProofException e) {
      Throwable cause = e.getCause();
      String state = cause instanceof SQLException ? ((SQLException) cause).getSQLState() : null;
      if (e.reason() == LossReason.SESSION_LOST
          && !dev.retsu.lock.internal.Diagnostics.isSessionLost(state)
          && session.isOpen()) {
        throw new AdvisoryLockException(
            "The ownership check could not run (SQLState " + state + ")",
            key(),
            candidateId(),
            cause);
      }
      throw new LeadershipLostException(
          e.reason(),
          e.reason() == LossReason.SESSION_LOST
              ? "The ownership check failed (SQLState " + state + ")"
              : String.valueOf(cause.getMessage()),
          key(),
          candidateId(),
          cause);
    }
    if (!session.keys().contains(key())) {
      throw new LeadershipLostException(
          LossReason.LOCK_NOT_HELD,
          "Backend " + backendPid() + " is alive but no longer holds the lock",
          key(),
          candidateId(),
          null);
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
      LOG.debug("{} Lease not proven held: {}", session.id().context(), e.getMessage());
      return false;
    }
  }

  /**
   * Ends the physical session, which releases the lock on the server. Never returns it to a pool.
   * Idempotent; never throws.
   */
  @Override
  public void close() {
    session.end();
  }

  /** The session (tests read it). */
  LockSession session() {
    return session;
  }

  /** How many proofs have read {@code pg_locks} so far (tests read it). */
  long fullProofs() {
    return session.proofs().fullProofs();
  }

  @Override
  public String toString() {
    return "AdvisoryLockLease"
        + session.id().context()
        + "{pid="
        + backendPid()
        + ", database="
        + database()
        + ", acquiredAt="
        + acquiredAt
        + (isOpen() ? "" : ", closed")
        + "}";
  }
}
