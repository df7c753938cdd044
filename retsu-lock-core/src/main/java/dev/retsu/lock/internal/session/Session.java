package dev.retsu.lock.internal.session;

import dev.retsu.lock.FencingToken;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.SqlFunction;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Set;
import java.util.function.BooleanSupplier;

/**
 * What the term layer and the recipes do with a session they own: the engine's one seam to the
 * database, so that the term protocol (the end order, the listener rules, refresh timeouts,
 * self-fencing) runs in database-free tests on a stub. The worker's narrower view of the socket and
 * the I/O lock is {@link #io()}. {@link LockSession} is the real one; each method's contract is
 * documented there. Implementations are thread-safe.
 */
public interface Session {

  /** Who the session is. */
  SessionId id();

  /** Its liveness and ownership bookkeeping. */
  Proofs proofs();

  /** Whether it has not been ended yet. */
  boolean isOpen();

  /** A guarded view for one holder; fails with 08003 once {@code over} holds. */
  Connection view(BooleanSupplier over);

  /** A recipe's own statements on the raw session, with the I/O lock held. */
  <T> T call(SqlFunction<T> work) throws SQLException;

  /** Proves it is alive, the same backend, and holds its keys; returns the keys it lost. */
  Set<LockKey> prove() throws ProofException;

  /** Takes a fencing token on the session, naming it and announcing {@code announce}. */
  FencingToken fencingToken(List<LockKey> announce) throws SQLException;

  /** The pid of a preferred candidate's session waiting for a lock this one holds, or 0. */
  int preferredWaiting() throws SQLException;

  /** Tries keys in one statement, taking at most {@code limit}. */
  List<LockKey> tryLock(List<LockKey> batch, int limit) throws SQLException, ProofException;

  /**
   * Unlocks keys in one statement, after notifying {@code releasedNotices} (best effort: a failed
   * notice does not stop the unlock).
   */
  void unlock(List<LockKey> release, String... releasedNotices) throws SQLException, ProofException;

  /**
   * Ends the session, which releases every key; a graceful end first notifies {@code
   * releasedNotices} (best effort), in the round trip that also unlocks every key once they are
   * committed. Idempotent; never throws.
   */
  void end(String... releasedNotices);

  /** The worker's view: its listener, the socket, the I/O lock. */
  SessionIo io();
}
