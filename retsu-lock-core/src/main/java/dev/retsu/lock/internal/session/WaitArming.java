package dev.retsu.lock.internal.session;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a {@link LockWaiter}'s freshly opened session is made ready to wait, once: its own {@code
 * lock_timeout} and no {@code statement_timeout} (a role's shorter one cannot cancel the wait), the
 * session's own values kept for the grant's statement to restore; the token mode; {@code LISTEN}
 * when the waiter learns how the previous term ended; and the client socket's keepalives, the same
 * as the server's side. Runs on the raw session with its I/O lock held.
 */
final class WaitArming {

  /** The waiter's logger: this line is the waiter's, as it always was. */
  private static final Logger LOG = LoggerFactory.getLogger(LockWaiter.class);

  /** What arming found: the session's own timeouts, and whether tokens carry the WAL timeline. */
  record Armed(String lockTimeout, String statementTimeout, boolean fullToken) {}

  private WaitArming() {}

  /**
   * Arms the session.
   *
   * @param spec how it was opened
   * @param c the raw session
   * @param waitTimeout the longest single wait
   * @param listen whether to LISTEN on {@value Notices#CHANNEL}
   * @return what the grant needs
   * @throws SQLException when a statement failed
   */
  static Armed arm(SessionOpener.Spec spec, Connection c, Duration waitTimeout, boolean listen)
      throws SQLException {
    String[] before = armTimeouts(c, waitTimeout);
    // The graceful end of a term won here runs this statement; pgjdbc keeps what it parsed per
    // connection, so the first release does not parse it while a successor waits for the key.
    c.prepareStatement(SessionSql.releasedThenUnlockAll()).close();
    // And the first ensureLeader() after the grant looks at the socket's pending bytes through
    // pgjdbc's fields: reach them once now, and look once (nothing is pending on an idle session
    // and nothing is read), so that the reflective access and the look are set up already.
    if (PgSession.countsPendingBytes(c)) {
      PgSession.probe(c, false);
    }
    boolean full = TokenMode.full(spec.dataSource(), c, spec.context());
    if (listen) {
      try (Statement st = c.createStatement()) {
        st.execute("LISTEN " + Notices.CHANNEL);
      }
    }
    if (!clientKeepalives(spec, c)) {
      LOG.debug(
          "{} Client keepalives unavailable; a dead server is noticed after waitTimeout",
          spec.context());
    }
    return new Armed(before[0], before[1], full);
  }

  /** Sets the wait's own lock_timeout and no statement_timeout; returns the session's own. */
  private static String[] armTimeouts(Connection c, Duration waitTimeout) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT pg_catalog.current_setting('lock_timeout'),"
                + " pg_catalog.current_setting('statement_timeout'),"
                + " pg_catalog.set_config('lock_timeout', ?::text, false),"
                + " pg_catalog.set_config('statement_timeout', '0', false)")) {
      ps.setString(1, waitTimeout.toMillis() + "ms");
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return new String[] {rs.getString(1), rs.getString(2)};
      }
    }
  }

  /**
   * Gives the client's socket the keepalives the server side gets, so a client blocked in a long
   * wait notices a dead server or a healed partition as fast as the server notices a dead client.
   */
  private static boolean clientKeepalives(SessionOpener.Spec spec, Connection c) {
    String idle = spec.settings().get("tcp_keepalives_idle");
    String interval = spec.settings().get("tcp_keepalives_interval");
    String count = spec.settings().get("tcp_keepalives_count");
    if (idle == null || interval == null || count == null) {
      return false;
    }
    try {
      return PgSession.clientKeepalives(
          c, Integer.parseInt(idle), Integer.parseInt(interval), Integer.parseInt(count));
    } catch (NumberFormatException e) {
      return false;
    }
  }
}
