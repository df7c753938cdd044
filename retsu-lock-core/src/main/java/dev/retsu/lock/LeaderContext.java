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
   * Returns whether this term is still on: not ended, and its self-fencing deadline not passed.
   * Cheap: no round trip.
   *
   * @return true while leading
   */
  boolean isLeader();

  /**
   * Throws unless {@link #isLeader()}. Call it before every side effect outside the database.
   *
   * @throws LeadershipLostException if the term is over or its self-fencing deadline passed
   */
  void ensureLeader();

  /**
   * Proves leadership with one round trip on the lease's session and moves the self-fencing
   * deadline forward. Long tasks call it between steps, so that they are not fenced while healthy.
   *
   * @throws LeadershipLostException if the session is lost or no longer holds the lock
   */
  void heartbeat();
}
