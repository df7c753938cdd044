package dev.retsu.lock.internal.session;

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
 * token is (WAL timeline, xid8): the timeline keeps tokens ordered across a failover to a replica
 * whose transaction counter lags. Where the WAL functions are refused (Aurora PostgreSQL reports
 * {@code pg_walfile_name()} as not supported, 0A000; a role without EXECUTE on them gets 42501) the
 * token is (0, xid8): still strictly increasing on one cluster (xid8 is never reused and the
 * token's commit is flushed), and across a failover only where the new primary has every committed
 * transaction of the old one (Aurora's shared storage does; an asynchronous replica may not). Which
 * one a data source uses is logged once. Thread-safe.
 */
public final class TokenMode {

  private static final Logger LOG = LoggerFactory.getLogger(TokenMode.class);

  /**
   * Whether each data source's server allows the WAL timeline; weak keys, no I/O under its lock.
   */
  private static final Map<DataSource, Boolean> WAL_TIMELINE =
      Collections.synchronizedMap(new WeakHashMap<>());

  /** The SQLStates of a WAL function that the server or the role refuses. */
  private static final String NOT_SUPPORTED = "0A000";

  private static final String NO_PRIVILEGE = "42501";

  private TokenMode() {}

  /**
   * Whether tokens on this data source carry the WAL timeline; the first call per data source asks
   * the server on {@code conn} (one statement that reads the current WAL file name: no xid, no
   * WAL), in autocommit with no transaction open.
   *
   * @param dataSource the data source the session came from (null: ask every time)
   * @param conn the session, autocommit, nothing open
   * @param context the log prefix
   * @return true for (timeline, xid8), false for (0, xid8)
   * @throws SQLException when the question itself failed for another reason
   */
  public static boolean walTimeline(DataSource dataSource, Connection conn, String context)
      throws SQLException {
    Boolean known = dataSource == null ? null : WAL_TIMELINE.get(dataSource);
    if (known != null) {
      return known;
    }
    boolean allowed;
    try (Statement s = conn.createStatement();
        ResultSet rs =
            s.executeQuery("SELECT pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn())")) {
      rs.next();
      allowed = true;
      LOG.debug("{} Fencing tokens carry the WAL timeline: (timeline, xid8)", context);
    } catch (SQLException e) {
      String state = e.getSQLState();
      if (!NOT_SUPPORTED.equals(state) && !NO_PRIVILEGE.equals(state)) {
        throw e;
      }
      allowed = false;
      LOG.warn(
          "{} The server refuses the WAL functions (SQLState {}: {}); fencing tokens are (0, xid8):"
              + " strictly increasing on this cluster, and across a failover only where the new"
              + " primary keeps every committed transaction",
          context,
          state,
          e.getMessage());
    }
    if (dataSource != null) {
      WAL_TIMELINE.put(dataSource, allowed);
    }
    return allowed;
  }

  /**
   * The token's timeline expression: from the current WAL file name, or 0.
   *
   * @param walTimeline whether the server allows the WAL functions
   * @return an {@code int} SQL expression
   */
  static String timeline(boolean walTimeline) {
    return walTimeline
        ? "('x' || pg_catalog.substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()),"
            + " 1, 8))::bit(32)::int"
        : "0";
  }
}
