package dev.retsu.lock.internal.session;

import dev.retsu.lock.FencingToken;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Collections;
import java.util.Map;
import java.util.WeakHashMap;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which fencing token a database allows, learned once per data source (invariant 8). The default
 * token is (WAL timeline, redo position of the latest checkpoint, xid8), taken by a statement that
 * writes only its commit record and waits for no flush ({@link dev.retsu.lock.FencingToken}). It
 * needs {@code pg_walfile_name(pg_current_wal_lsn())} and {@code pg_control_checkpoint()}, both
 * executable by PUBLIC by default.
 *
 * <ul>
 *   <li>A server that does not support them (Aurora PostgreSQL reports the WAL functions as not
 *       supported, 0A000) gets the fallback (0, 0, xid8) with its commit flushed: still strictly
 *       increasing on one cluster, and across a failover only where the new primary has every
 *       committed transaction of the old one (Aurora's shared storage does). Support is a property
 *       of the server, the same for every candidate of a key for the server's life, so one key
 *       never sees both shapes from one server.
 *   <li>A role refused EXECUTE on them (42501) is not a reason to fall back: a role's rights change
 *       with a GRANT or a REVOKE while terms run, and a fallback token taken after a full one would
 *       sort below it, letting the older term's writes pass a fence. The check fails with the
 *       SQLState and a message naming the GRANT; nothing is remembered, so the next attempt asks
 *       again.
 * </ul>
 *
 * Which shape a data source uses is logged once. Thread-safe.
 */
public final class TokenMode {

  private static final Logger LOG = LoggerFactory.getLogger(TokenMode.class);

  /**
   * Whether each data source's server supports the full token; weak keys, no I/O under its lock.
   */
  private static final Map<DataSource, Boolean> FULL =
      Collections.synchronizedMap(new WeakHashMap<>());

  /** The SQLStates of a function that the server or the role refuses. */
  private static final String NOT_SUPPORTED = "0A000";

  private static final String NO_PRIVILEGE = "42501";

  /** What the full token reads; a probe reads the same, writing nothing and assigning no xid. */
  private static final String PROBE =
      "SELECT pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), (SELECT c.redo_lsn FROM"
          + " pg_catalog.pg_control_checkpoint() c)";

  private TokenMode() {}

  /**
   * Whether tokens on this data source take the full shape; the first call per data source asks the
   * server on {@code conn} (one statement that reads the current WAL file name and the control
   * file: no xid, no WAL), in autocommit with no transaction open.
   *
   * @param dataSource the data source the session came from (null: ask every time)
   * @param conn the session, autocommit, nothing open
   * @param context the log prefix
   * @return true for (timeline, redo, xid8), false for (0, 0, xid8) with a flushed commit
   * @throws SQLException when the question failed, among them with SQLState 42501 when the role may
   *     not run the functions
   */
  public static boolean full(DataSource dataSource, Connection conn, String context)
      throws SQLException {
    Boolean known = dataSource == null ? null : FULL.get(dataSource);
    if (known != null) {
      return known;
    }
    boolean supported;
    try (Statement s = conn.createStatement();
        ResultSet rs = s.executeQuery(PROBE)) {
      rs.next();
      supported = true;
      LOG.debug("{} Fencing tokens are (timeline, checkpoint redo, xid8)", context);
    } catch (SQLException e) {
      String state = e.getSQLState();
      if (NO_PRIVILEGE.equals(state)) {
        throw new SQLException(
            "The candidates' role may not run the functions a fencing token reads ("
                + e.getMessage()
                + "). They are executable by PUBLIC unless revoked: GRANT EXECUTE ON FUNCTION"
                + " pg_catalog.pg_walfile_name(pg_lsn), pg_catalog.pg_control_checkpoint() TO"
                + " the candidates' role. A term is not started with another kind of token, which"
                + " could sort below the tokens of earlier terms",
            state,
            e);
      }
      if (!NOT_SUPPORTED.equals(state)) {
        throw e;
      }
      supported = false;
      LOG.warn(
          "{} The server does not support the WAL functions (SQLState {}: {}); fencing tokens are"
              + " (0, 0, xid8) with their commit flushed: strictly increasing on this cluster, and"
              + " across a failover only where the new primary keeps every committed transaction",
          context,
          state,
          e.getMessage());
    }
    if (dataSource != null) {
      FULL.put(dataSource, supported);
    }
    return supported;
  }

  /**
   * Makes a data source take the fallback token, as a server that does not support the WAL
   * functions (0A000) does: for tests of that shape on a server that supports them, which cannot be
   * made to refuse a built-in function to a superuser.
   *
   * @param dataSource the data source
   */
  public static void useFallback(DataSource dataSource) {
    FULL.put(dataSource, false);
  }

  /**
   * The token's timeline expression: from the current WAL file name, or 0.
   *
   * @param full whether the server supports the full token
   * @return a {@code bigint} SQL expression (the timeline, unsigned)
   */
  static String timeline(boolean full) {
    return full
        ? "('x00000000' || pg_catalog.substr(pg_catalog.pg_walfile_name("
            + "pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(64)::int8"
        : "0::int8";
  }

  /**
   * The token's redo expression: the latest checkpoint's redo position in bytes, or 0.
   *
   * @param full whether the server supports the full token
   * @return a {@code numeric} SQL expression
   */
  static String redo(boolean full) {
    return full
        ? "(SELECT pg_catalog.pg_wal_lsn_diff(c.redo_lsn, '0/0') FROM"
            + " pg_catalog.pg_control_checkpoint() c)"
        : "0::numeric";
  }

  /**
   * The token's comparable form as SQL ({@link dev.retsu.lock.FencingToken#toString()}) over three
   * column references that are not null.
   *
   * @param timeline a {@code bigint} column
   * @param redo a {@code numeric} column
   * @param xid a {@code text} column of a {@code xid8}
   * @return a text expression
   */
  static String form(String timeline, String redo, String xid) {
    return part(timeline + "::text") + " || " + part(redo + "::text") + " || " + part(xid);
  }

  private static String part(String digits) {
    return "pg_catalog.chr(64 + pg_catalog.length(" + digits + ")) || " + digits;
  }

  /**
   * Reads a token from a statement's answer.
   *
   * @param rs the answer, on its row
   * @param timeline the column of the timeline (an unsigned {@code bigint})
   * @param redo the column of the redo position (a {@code numeric})
   * @param xid the column of the xid8 (as text)
   * @return the token
   * @throws SQLException when a column cannot be read
   */
  public static FencingToken read(ResultSet rs, int timeline, int redo, int xid)
      throws SQLException {
    return new FencingToken(
        (int) rs.getLong(timeline),
        Long.parseUnsignedLong(rs.getString(redo)),
        Long.parseUnsignedLong(rs.getString(xid)));
  }
}
