package dev.retsu.lock.internal.session;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The socket side of one {@link LockSession}: the probe that reads what the client already
 * received, and the idle wait on the socket, each under the session's I/O lock. It remembers an end
 * it saw (an EOF is no pending byte, so what a read consumed must not be forgotten) and which
 * thread waits on the socket between refreshes, so calls from other threads count as the foreign
 * use that makes the worker leave the socket to them. Thread-safe.
 */
final class SessionSocket {

  private static final Logger LOG = LoggerFactory.getLogger(SessionSocket.class);

  private final SessionId id;
  private final Connection conn;
  private final ReentrantLock io;
  private final AtomicBoolean open;
  private final Proofs proofs;

  /** Whether a probe sees pending bytes without a read (a plain TCP socket). */
  final boolean countsPendingBytes;

  private volatile Thread idleThread;
  private volatile boolean endSeen;
  private volatile boolean droppedNotifications;

  SessionSocket(
      SessionId id, Connection conn, ReentrantLock io, AtomicBoolean open, Proofs proofs) {
    this.id = id;
    this.conn = conn;
    this.io = io;
    this.open = open;
    this.proofs = proofs;
    this.countsPendingBytes = PgSession.countsPendingBytes(conn);
  }

  /**
   * Takes the I/O lock within {@code nanos} unless another thread holds or waits for it (a fair
   * lock: never barges); an interrupt answers false and stays set.
   */
  boolean tryLock(long nanos) {
    try {
      return io.tryLock(Math.max(0, nanos), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /** Whether the calling thread is not the one that waits on the socket between refreshes. */
  boolean foreignThread() {
    Thread idle = idleThread;
    return idle != null && idle != Thread.currentThread();
  }

  /** The one 08003 for a call on a session that ended or a term that is over. */
  static SQLException closed(SessionId id) {
    return new SQLException("The lease is closed or its term is over " + id.context(), "08003");
  }

  /**
   * What the socket shows without a round trip. A call in progress on the session is waited for
   * (its answer is evidence too), but at most {@code maxWaitNanos}.
   *
   * @return the evidence, or null if the session stayed busy for {@code maxWaitNanos}
   */
  public SessionIo.Evidence probe(long maxWaitNanos, boolean readSocket) {
    if (!tryLock(maxWaitNanos)) {
      return null;
    }
    try {
      if (!open.get() || endSeen) {
        return SessionIo.Evidence.ENDED;
      }
      boolean reads = readSocket || !countsPendingBytes;
      SessionIo.Evidence evidence = PgSession.probe(conn, reads);
      if (reads) {
        proofs.read();
      }
      if (evidence == SessionIo.Evidence.ENDED) {
        endSeen = true; // an EOF is not counted as a pending byte: keep what was seen
      }
      return evidence;
    } finally {
      io.unlock();
    }
  }

  /**
   * Waits up to {@code millis} for anything on the session's socket, holding the I/O lock for that
   * slice only. Notifications that arrive are consumed (LISTEN on a lock's session is not
   * supported); the first time per session that one on another channel than {@value
   * Notices#CHANNEL} arrives is logged at WARN.
   *
   * @return true if something arrived (the wait ended early); false if nothing did within {@code
   *     millis}, or this cannot wait on the socket (no pgjdbc, or inside a transaction)
   * @throws SQLException when the session ended
   */
  public boolean awaitEvent(int millis) throws SQLException {
    io.lock();
    try {
      if (!open.get()) {
        throw closed(id);
      }
      idleThread = Thread.currentThread();
      if (proofs.foreignUseWithin(Proofs.SHARED_FOR_NANOS) || !PgSession.canAwait(conn)) {
        return false; // another thread works on the session (it may have queued meanwhile)
      }
      PGNotification[] notes;
      try {
        notes = PgSession.await(conn, millis);
      } catch (SQLException e) {
        endSeen = true; // what the read consumed is gone: a probe from now on answers ENDED
        throw e;
      }
      if (notes == null) {
        return false;
      }
      proofs.read();
      if (notes.length == 0) {
        return false; // the read timed out: nothing arrived
      }
      // The library's own channel is expected here: a WAIT standby with the lock-delay listened.
      PGNotification foreign = null;
      for (PGNotification n : notes) {
        if (!Notices.CHANNEL.equals(n.getName())) {
          foreign = n;
        }
      }
      if (foreign != null && !droppedNotifications) {
        droppedNotifications = true;
        LOG.warn(
            "{} Dropped a notification on channel {} that arrived on the lock's session: the"
                + " library waits on this session, so LISTEN on it is not supported; use another"
                + " connection",
            id.context(),
            foreign.getName());
      }
      return true;
    } finally {
      io.unlock();
    }
  }
}
