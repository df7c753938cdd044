package dev.retsu.lock.internal;

import java.sql.Connection;
import java.sql.SQLException;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * Waits on a pgjdbc session's socket instead of sleeping, so that a terminated session or a stopped
 * server is noticed the moment the server says so (the wait fails with its SQLState). Loaded only
 * when pgjdbc is on the class path; see {@link #AVAILABLE}.
 */
public final class PgSessionWaiter {

  /** Whether pgjdbc is present, so {@link #await} can be used. */
  public static final boolean AVAILABLE = pgjdbcPresent();

  private PgSessionWaiter() {}

  /**
   * Blocks up to {@code millis} reading the session's socket.
   *
   * @param connection a connection that wraps a pgjdbc connection
   * @param millis how long to wait, at least 1
   * @return the number of notifications that arrived (they are dropped), or -1 if the connection is
   *     not a pgjdbc connection
   * @throws SQLException when the server ends the session or the connection breaks
   */
  public static int await(Connection connection, int millis) throws SQLException {
    if (!connection.isWrapperFor(PGConnection.class)) {
      return -1;
    }
    PGNotification[] notes =
        connection.unwrap(PGConnection.class).getNotifications(Math.max(1, millis));
    return notes == null ? 0 : notes.length;
  }

  private static boolean pgjdbcPresent() {
    try {
      Class.forName("org.postgresql.PGConnection", false, PgSessionWaiter.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }
}
