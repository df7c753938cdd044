package dev.retsu.lock.internal.session;

import dev.retsu.lock.FencingToken;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.SqlFunction;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.function.BooleanSupplier;

/**
 * What the term layer does with a session it owns: the engine's one seam to the database, so that
 * the term protocol (the end order, the listener rules, refresh timeouts, self-fencing) runs in
 * database-free tests on a stub. {@link LockSession} is the real one; each method's contract is
 * documented there. Implementations are thread-safe.
 */
public interface Session {

  /** What a session reports to the recipe that owns it, on the thread that saw it. */
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

  /** Who the session is. */
  SessionId id();

  /** Its liveness and ownership bookkeeping. */
  Proofs proofs();

  /** Tells {@code l} what this session finds from now on. */
  void listen(Listener l);

  /** Whether it has not been ended yet. */
  boolean isOpen();

  /** The keys it holds, as far as the library knows. */
  Set<LockKey> keys();

  /** Records keys granted outside {@link #tryLock} (a waiting standby's grant). */
  void held(Collection<LockKey> taken);

  /** A guarded view for one holder; fails with 08003 once {@code over} holds. */
  Connection view(BooleanSupplier over);

  /** A recipe's own statements on the raw session, with the I/O lock held. */
  <T> T call(SqlFunction<T> work) throws SQLException;

  /** Proves it is alive, the same backend, and holds its keys; returns the keys it lost. */
  Set<LockKey> prove() throws ProofException;

  /** Whether a round trip now leaves user code's transaction as it is (I/O lock held). */
  boolean canProveNow();

  /**
   * What the client has received on the session's socket, waiting at most {@code maxWaitNanos} for
   * a call in progress; with {@code readSocket} also a bare EOF or reset (a read of up to 1 ms).
   */
  PgSession.Evidence probe(long maxWaitNanos, boolean readSocket);

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

  /** Puts the session back in autocommit after user work; true if something had to be undone. */
  boolean repairAutocommit() throws SQLException;

  /** Takes a fencing token on the session, naming it and announcing {@code announce}. */
  FencingToken fencingToken(List<LockKey> announce) throws SQLException;

  /** The pid of a preferred candidate's session waiting for a lock this one holds, or 0. */
  int preferredWaiting() throws SQLException;

  /**
   * Notifies {@code released} notices before a graceful release; best effort. With {@code
   * thenUnlockAll}, for a session that ends right after, the same round trip then unlocks every key
   * of the session, once the notices are committed.
   */
  void released(List<String> payloads, boolean thenUnlockAll);

  /** Records the token the statement that won the key took; the next token call returns it. */
  void tokenTaken(FencingToken token);

  /** Tries keys in one statement, taking at most {@code limit}. */
  List<LockKey> tryLock(List<LockKey> batch, int limit) throws SQLException, ProofException;

  /** Unlocks keys in one statement. */
  void unlock(List<LockKey> release) throws SQLException, ProofException;

  /** Ends the session, which releases every key. Idempotent; never throws. */
  void end();

  /** Ends it at once without writing to it. Idempotent; never throws. */
  void abort();
}
