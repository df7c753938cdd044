package dev.retsu.lock;

import dev.retsu.lock.internal.PgSession;
import java.sql.Connection;
import java.sql.SQLException;

/**
 * What a term does with the lease that holds its lock: the loop's one seam to the database, so that
 * its decisions (EXIT or STEP_DOWN, backoff, the order in which a term ends) are unit-tested with a
 * stub. {@link AdvisoryTermLease} is the real one; each method is the lease's method of the same
 * name. Implementations are thread-safe, as {@link AdvisoryLockLease} is.
 */
interface TermLease {

  /** The backend pid of the session that holds the lock. */
  int backendPid();

  /** The database the lock is in. */
  String database();

  /** The guarded view of the session, for the task. */
  Connection connection();

  /** Runs work on the session with no other call in between. */
  <T> T withConnection(SqlFunction<T> work) throws SQLException;

  /** Tells the term what happens on the session; called with the session's I/O lock held. */
  void watch(AdvisoryLockLease.Watcher watcher);

  /** Takes the term's fencing token on the session. */
  FencingToken fencingToken() throws SQLException;

  /** One ownership round trip, bounded by {@code timeoutMillis}. */
  void verify(int timeoutMillis);

  /** What the session's socket shows, waiting at most {@code maxWaitNanos} for a call on it. */
  PgSession.Evidence probe(long maxWaitNanos);

  /** Takes the session's I/O lock if it is free. */
  boolean tryLockIo();

  /** Releases the I/O lock taken with {@link #tryLockIo()}. */
  void unlockIo();

  /** Whether a round trip now leaves the user's transaction as it is (I/O lock held). */
  boolean canProveNow();

  /** Waits up to {@code millis} for anything on the socket; false if it cannot wait there. */
  boolean awaitSessionEvent(int millis) throws SQLException;

  /** Puts the session back in autocommit after the task; true if something had to be undone. */
  boolean restoreAutocommit() throws SQLException;

  /** Ends the session without writing to it. Idempotent; never throws. */
  void abort();

  /** Ends the session, which releases the lock. Idempotent; never throws. */
  void close();
}
