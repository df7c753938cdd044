package dev.retsu.lock.internal.session;

import dev.retsu.lock.AdvisoryLockException;
import dev.retsu.lock.LeaderInfo;
import dev.retsu.lock.LockHolder;
import dev.retsu.lock.LockKey;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import javax.sql.DataSource;

/** Who holds a key right now, read on a connection borrowed for this one query. Stateless. */
public final class Holders {

  /** The candidate a failed read names: a reader is none. */
  public static final String READER = "none (a read)";

  private Holders() {}

  /**
   * Reads the leaders of keys on {@code conn}, one statement.
   *
   * @param conn a connection in autocommit
   * @param keys the keys
   * @return the leader of each key that is held
   * @throws SQLException when the query fails
   */
  public static Map<LockKey, LeaderInfo> leaders(Connection conn, List<LockKey> keys)
      throws SQLException {
    Map<LockKey, LeaderInfo> out = new HashMap<>();
    if (keys.isEmpty()) {
      return out;
    }
    try (PreparedStatement ps = conn.prepareStatement(SessionSql.holders())) {
      KeySql.bindArrays(conn, ps, 1, keys);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          LockKey key = KeySql.fromPgLocks(rs.getLong(1), rs.getLong(2), rs.getInt(3));
          if (key != null) {
            out.put(
                key, info(key, rs.getInt(4), rs.getString(5), rs.getTimestamp(6), rs.getString(7)));
          }
        }
      }
    }
    return out;
  }

  /** A holder as SQL shows it. */
  static LeaderInfo info(
      LockKey key, int pid, String applicationName, Timestamp stateChange, String database) {
    Optional<Notices.Name> name = Notices.parseName(applicationName);
    return new LeaderInfo(
        key,
        name.map(Notices.Name::candidateId).orElse(""),
        pid,
        database,
        name.flatMap(Notices.Name::token),
        OptionalLong.empty(),
        Optional.empty(),
        Optional.ofNullable(stateChange).map(Timestamp::toInstant),
        Optional.empty());
  }

  /**
   * Reads the leader of one key on a connection borrowed from {@code dataSource}.
   *
   * @param dataSource where to ask
   * @param key the key
   * @return the leader, or empty
   * @throws AdvisoryLockException if the query fails (the SQLException is the cause)
   */
  public static Optional<LeaderInfo> leader(DataSource dataSource, LockKey key) {
    try (Connection conn = dataSource.getConnection()) {
      return Optional.ofNullable(leaders(conn, List.of(key)).get(key));
    } catch (SQLException e) {
      throw new AdvisoryLockException(
          "Cannot read the leader (SQLState " + e.getSQLState() + ")", key, READER, e);
    }
  }

  /**
   * Reads the holder of the spec's key.
   *
   * @param spec where and which key
   * @return the holder, or empty if nobody holds it
   * @throws AdvisoryLockException if the query fails (the SQLException is the cause)
   */
  public static Optional<LockHolder> current(SessionOpener.Spec spec) {
    try (Connection conn = spec.dataSource().getConnection()) {
      int previous = conn.getNetworkTimeout();
      conn.setNetworkTimeout(SessionTerminator.DIRECT, spec.roundTripMillis());
      try (PreparedStatement ps = conn.prepareStatement(SessionSql.currentHolder(spec.key()))) {
        KeySql.bindLocks(ps, 1, spec.key());
        try (ResultSet rs = ps.executeQuery()) {
          if (!rs.next()) {
            return Optional.empty();
          }
          Timestamp since = rs.getTimestamp(5);
          return Optional.of(
              new LockHolder(
                  rs.getInt(1),
                  rs.getString(2),
                  rs.getString(3),
                  Optional.ofNullable(rs.getString(4)),
                  Optional.ofNullable(since).map(Timestamp::toInstant),
                  rs.getString(6)));
        }
      } finally {
        conn.setNetworkTimeout(SessionTerminator.DIRECT, previous);
      }
    } catch (SQLException e) {
      throw new AdvisoryLockException(
          "Cannot read the current holder (SQLState " + e.getSQLState() + ")",
          spec.key(),
          spec.candidateId(),
          e);
    }
  }
}
