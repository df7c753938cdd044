package dev.retsu.lock.internal.session;

import dev.retsu.lock.AdvisoryLockException;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HexFormat;

/**
 * What happens to a connection between the pool and a {@link SessionOpener}'s opening statement: it
 * is borrowed, with a clear failure naming the SQLState when the database cannot be reached; the
 * library's round trips are bounded; a transaction it was lent in is ended; and the session's
 * settings get a fresh random marker. Refusing an unsafe endpoint stays {@link SessionOpener}'s
 * (invariant 4). {@link #endTransaction} is also how a session is put back in autocommit after user
 * work. Stateless, thread-safe.
 */
final class SessionBorrow {

  private static final SecureRandom RANDOM = new SecureRandom();

  private SessionBorrow() {}

  /**
   * Borrows a connection.
   *
   * @throws AdvisoryLockException when the database cannot be reached (the SQLException is the
   *     cause)
   */
  static Connection borrow(SessionOpener.Spec spec) {
    try {
      return spec.dataSource().getConnection();
    } catch (SQLException e) {
      throw new AdvisoryLockException(
          "Cannot connect to the database (SQLState " + e.getSQLState() + ")",
          spec.key(),
          spec.candidateId(),
          e);
    }
  }

  /** Bounds our round trips and ends a lent transaction; returns autocommit as borrowed. */
  static boolean prepare(SessionOpener.Spec spec, Connection conn) throws SQLException {
    conn.setNetworkTimeout(SessionTerminator.DIRECT, spec.roundTripMillis());
    boolean autoCommit = conn.getAutoCommit();
    endTransaction(conn);
    return autoCommit;
  }

  /**
   * Puts a connection in autocommit with no transaction open: rolls back what is uncommitted (a
   * session lock taken inside it would outlive it, and the session would idle in it).
   *
   * @return true if something had to be rolled back or autocommit turned back on
   */
  static boolean endTransaction(Connection conn) throws SQLException {
    if (!conn.getAutoCommit()) {
      conn.rollback();
      conn.setAutoCommit(true);
      return true;
    }
    PgSession.Transaction tx = PgSession.transaction(conn);
    if (tx == PgSession.Transaction.OPEN || tx == PgSession.Transaction.FAILED) {
      try (Statement s = conn.createStatement()) {
        s.execute("ROLLBACK");
      }
      return true;
    }
    return false;
  }

  /** The settings to apply, with a fresh random marker (16 bytes, hex). */
  static SessionSettings settings(SessionOpener.Spec spec) {
    byte[] b = new byte[16];
    RANDOM.nextBytes(b);
    return SessionSettings.of(spec.applicationName(), spec.settings(), HexFormat.of().formatHex(b));
  }
}
