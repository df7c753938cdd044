package dev.retsu.lock;

import java.sql.Connection;
import java.sql.SQLException;

/**
 * What the leader task gets: the term, and the one connection it may use. Valid for one term; after
 * the term ends every method that does work fails. Thread-safe.
 */
public interface LeaderContext {

  /**
   * Returns the term.
   *
   * @return the current term
   */
  Term term();

  /**
   * Returns the lease's connection: the session that holds the lock, the only connection leader
   * work should use. {@code close()} on it does nothing; after the term it fails with SQLState
   * 08003.
   *
   * @return the lease's connection
   */
  Connection connection();

  /**
   * Runs work on the lease's connection.
   *
   * @param work the work
   * @param <T> its result type
   * @return the result
   * @throws SQLException from the work, or 08003 once the term is over
   */
  <T> T withConnection(SqlFunction<T> work) throws SQLException;

  /**
   * Returns the term's fencing token.
   *
   * @return the token
   */
  default FencingToken fencingToken() {
    return term().fencingToken();
  }

  /**
   * Returns whether this term is still on: not ended, and its self-fencing deadline not passed. A
   * local hint with no I/O: it does not read the session's socket, so use {@link #ensureLeader()}
   * before an effect.
   *
   * @return true while leading
   */
  boolean isLeader();

  /**
   * Checks, without a round trip, that this candidate may still act as leader; call it right before
   * every effect the lock guards. It fails when the term has ended or its self-fencing deadline
   * passed, when any statement on the lease's session (through any JDBC object reachable from it)
   * failed with a session-lost SQLState, and when the server has already told the client that the
   * session ended: a FATAL, EOF or reset already on the session's socket (read with pgjdbc, waiting
   * at most about a millisecond when nothing is pending). When another call is using the session at
   * that moment (the loop's heartbeat, or a statement on another thread), the check waits for it to
   * finish, because its answer is evidence too, but never past the self-fencing deadline. After SQL
   * that may have released the lock on the session itself (an unlock function or {@code DISCARD}),
   * or on a driver whose socket cannot be read, it does what {@link #proveLeader()} does instead.
   *
   * <p>What it cannot see: an effect already in flight after the check passed, and a server-side
   * end whose evidence has not reached the client yet. The fencing token covers both.
   *
   * @throws LeadershipLostException if this candidate must stop acting; the term is over
   */
  void ensureLeader();

  /**
   * The strict check: proves in one round trip on the lease's session that it is alive, is the same
   * backend and still holds the lock, and moves the self-fencing deadline forward. Use it right
   * before an effect that must not happen twice, at the cost of a round trip.
   *
   * @throws LeadershipLostException if the session is lost or no longer holds the lock; the term is
   *     over
   */
  void proveLeader();
}
