package dev.retsu.lock.cli;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.Optional;

/**
 * A session's {@code pg_stat_activity} row. Columns a role may not see (another role's session
 * without {@code pg_read_all_stats}) are empty.
 *
 * @param pid the backend pid
 * @param applicationName its application_name
 * @param user its user, if visible
 * @param clientAddress its client address and port, if visible (empty for a Unix socket too)
 * @param state its state ({@code idle}, {@code active}, ...), if visible
 * @param stateChange when its state last changed, if visible
 * @param backendStart when its session started, if visible
 */
record Activity(
    int pid,
    String applicationName,
    Optional<String> user,
    Optional<String> clientAddress,
    Optional<String> state,
    Optional<Instant> stateChange,
    Optional<Instant> backendStart) {

  private static final String SQL =
      "SELECT pid, application_name, usename, host(client_addr), client_port, state,"
          + " state_change, backend_start FROM pg_catalog.pg_stat_activity WHERE pid = ?";

  /**
   * Reads one session's row.
   *
   * @param conn where
   * @param pid the session
   * @return the row, or empty when the session has ended
   * @throws SQLException when the query fails
   */
  static Optional<Activity> read(Connection conn, int pid) throws SQLException {
    try (PreparedStatement ps = conn.prepareStatement(SQL)) {
      ps.setInt(1, pid);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return Optional.empty();
        }
        String host = rs.getString(4);
        int port = rs.getInt(5);
        boolean hasPort = !rs.wasNull() && port > 0;
        return Optional.of(
            new Activity(
                rs.getInt(1),
                rs.getString(2),
                Optional.ofNullable(rs.getString(3)),
                Optional.ofNullable(host).map(h -> hasPort ? h + ":" + port : h),
                Optional.ofNullable(rs.getString(6)),
                instant(rs, 7),
                instant(rs, 8)));
      }
    }
  }

  private static Optional<Instant> instant(ResultSet rs, int column) throws SQLException {
    return Optional.ofNullable(rs.getObject(column, OffsetDateTime.class))
        .map(OffsetDateTime::toInstant);
  }

  Json json() {
    return new Json()
        .num("pid", pid)
        .str("applicationName", applicationName)
        .str("user", user)
        .str("clientAddress", clientAddress)
        .str("state", state)
        .time("stateChange", stateChange)
        .time("backendStart", backendStart);
  }
}
