package dev.retsu.lock.internal.session;

import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import java.sql.SQLException;
import java.util.Set;

/**
 * The worker's narrow view of the session it serves: who hears what the session finds, what the
 * client already received on its socket, the short wait on that socket between refreshes, and the
 * I/O lock, taken only when nobody holds or waits for it. The recipes never need it; they use
 * {@link Session}. {@link LockSession} is the real one; each method's contract is documented there.
 * Implementations are thread-safe.
 */
public interface SessionIo {

  /** What a probe found on the socket. */
  enum Evidence {
    /** Nothing pending: the session has not told the client anything. */
    QUIET,
    /** An asynchronous message is pending (notification, notice, parameter status). */
    PENDING,
    /** The session ended: a FATAL, EOF or RST is on the socket, or the socket is closed. */
    ENDED,
    /** The probe cannot read this connection's socket (no pgjdbc, or its internals differ). */
    UNKNOWN
  }

  /** What a session reports to the worker that serves it, on the thread that saw it. */
  interface Listener {
    /** Hears nothing. */
    Listener NONE = new Listener() {};

    /**
     * The session cannot hold locks any more, or cannot prove it: ended by the server, a backend
     * shared with another client, or a proof that could not run.
     *
     * @param reason SESSION_LOST or POOLER_DETECTED
     * @param cause the failure
     */
    default void sessionEnded(LossReason reason, Throwable cause) {}

    /**
     * The session is alive but no longer holds these keys.
     *
     * @param keys the keys an ownership proof did not find
     */
    default void keysLost(Set<LockKey> keys) {}
  }

  /**
   * Puts the session back in autocommit with no transaction open after user work (a refresh): rolls
   * back what was left uncommitted.
   *
   * @return true if something had to be rolled back or autocommit turned back on
   * @throws SQLException when the session failed
   */
  boolean repairAutocommit() throws SQLException;

  /**
   * Ends the session at once without writing to it (self-fencing: no socket write that could
   * block). Idempotent; never throws.
   */
  void abort();

  /** Tells {@code l} what this session finds from now on. */
  void listen(Listener l);

  /** Whether a round trip now leaves user code's transaction as it is (I/O lock held). */
  boolean canProveNow();

  /**
   * What the client has received on the session's socket, waiting at most {@code maxWaitNanos} for
   * a call in progress; with {@code readSocket} also a bare EOF or reset (a read of up to 1 ms).
   */
  Evidence probe(long maxWaitNanos, boolean readSocket);

  /** Takes the I/O lock if nobody holds or waits for it. */
  boolean tryLockIo();

  /** Releases the I/O lock taken with {@link #tryLockIo()}. */
  void unlockIo();

  /**
   * Waits up to {@code millis} on the socket: true if something arrived, false if nothing did or it
   * cannot wait there.
   */
  boolean awaitEvent(int millis) throws SQLException;

  /**
   * Whether {@link #probe probe(0, false)} sees what arrived without reading (a plain TCP socket
   * whose pending bytes the kernel counts), so it can be called often without holding the session.
   */
  default boolean countsPendingBytes() {
    return false;
  }
}
