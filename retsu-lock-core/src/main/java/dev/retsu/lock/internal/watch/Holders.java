package dev.retsu.lock.internal.watch;

import dev.retsu.lock.AdvisoryLockException;
import dev.retsu.lock.FencingToken;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.internal.Diagnostics;
import dev.retsu.lock.internal.session.HolderSql;
import dev.retsu.lock.internal.session.KeySql;
import dev.retsu.lock.internal.session.Notices;
import dev.retsu.lock.internal.session.SessionOpener;
import dev.retsu.lock.internal.session.SessionTerminator;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Who holds a key right now, read on a connection borrowed for this one query, as {@link Row}s (the
 * public {@code LeaderInfo} is made from them by its own factory and by the watch, so this read
 * depends on no public type but the key). A holder's session names a candidate and a token only
 * when it is of the candidates' role ({@link SessionSql#candidateRole}); any other holder is
 * foreign, whatever its name says, and is logged at WARN. Stateless.
 */
public final class Holders {

  private static final Logger LOG = LoggerFactory.getLogger(Holders.class);

  /**
   * One holder as SQL shows it: a foreign one names no candidate and no token.
   *
   * @param key the key
   * @param pid the holder's backend pid
   * @param candidateId the candidate its name shows, empty when none or foreign
   * @param token the token its name shows, empty when none or foreign
   * @param lastRenewal its session's {@code state_change}, when visible
   * @param database the database
   * @param foreign whether its session is outside the candidates' role
   */
  public record Row(
      LockKey key,
      int pid,
      String candidateId,
      Optional<FencingToken> token,
      Optional<Instant> lastRenewal,
      String database,
      boolean foreign) {}

  /** The candidate a failed read names: a reader is none. */
  public static final String READER = "none (a read)";

  private Holders() {}

  /**
   * Reads the leaders of keys on {@code conn}, one statement; the candidates' role is the
   * connection's own login role.
   *
   * @param conn a connection in autocommit
   * @param keys the keys
   * @return the leader of each key that is held
   * @throws SQLException when the query fails
   */
  public static Map<LockKey, Row> leaders(Connection conn, List<LockKey> keys) throws SQLException {
    return leaders(conn, keys, null);
  }

  /**
   * Reads the leaders of keys on {@code conn}, one statement.
   *
   * @param conn a connection in autocommit
   * @param keys the keys
   * @param role the candidates' role, or null for the connection's own login role
   * @return the leader of each key that is held
   * @throws SQLException when the query fails
   */
  public static Map<LockKey, Row> leaders(Connection conn, List<LockKey> keys, String role)
      throws SQLException {
    Map<LockKey, Row> out = new HashMap<>();
    if (keys.isEmpty()) {
      return out;
    }
    try (PreparedStatement ps = conn.prepareStatement(HolderSql.holders(role))) {
      KeySql.bindArrays(conn, ps, 1, keys);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          LockKey key = KeySql.fromPgLocks(rs.getLong(1), rs.getLong(2), rs.getInt(3));
          if (key != null) {
            int pid = rs.getInt(4);
            String name = rs.getString(5);
            boolean foreign = rs.getBoolean(8);
            if (foreign) {
              warnForeign(key, READER, pid, rs.getString(9), name, role);
            }
            out.put(key, info(key, pid, name, rs.getTimestamp(6), rs.getString(7), foreign));
          }
        }
      }
    }
    return out;
  }

  private static void warnForeign(
      LockKey key, String candidate, int pid, String user, String applicationName, String role) {
    LOG.warn(
        "{} The key is held by a foreign session: backend pid {}, role {}, application_name {};"
            + " it is not of the candidates' role ({}), so it is no candidate's term whatever its"
            + " name says, and no candidate can lead until it lets go (pg_terminate_backend({})"
            + " evicts it; revoking the role's CONNECT keeps it out)",
        Diagnostics.context(key, candidate),
        pid,
        user,
        applicationName,
        role == null ? "the reader's own login role" : role,
        pid);
  }

  /** A holder as SQL shows it: a foreign one names no candidate and no token. */
  static Row info(
      LockKey key,
      int pid,
      String applicationName,
      Timestamp stateChange,
      String database,
      boolean foreign) {
    Optional<Notices.Name> name = foreign ? Optional.empty() : Notices.parseName(applicationName);
    return new Row(
        key,
        pid,
        name.map(Notices.Name::candidateId).orElse(""),
        name.flatMap(Notices.Name::token),
        Optional.ofNullable(stateChange).map(Timestamp::toInstant),
        database,
        foreign);
  }

  /**
   * Reads the leader of one key on a connection borrowed from {@code dataSource}.
   *
   * @param dataSource where to ask
   * @param key the key
   * @param role the candidates' role, or null for the connection's own login role
   * @return the leader, or empty
   * @throws AdvisoryLockException if the query fails (the SQLException is the cause)
   */
  public static Optional<Row> leader(DataSource dataSource, LockKey key, String role) {
    try (Connection conn = dataSource.getConnection()) {
      return Optional.ofNullable(leaders(conn, List.of(key), role).get(key));
    } catch (SQLException e) {
      throw new AdvisoryLockException(
          "Cannot read the leader (SQLState " + e.getSQLState() + ")", key, READER, e);
    }
  }

  /**
   * Reads the holder of the spec's key, each round trip bounded by the spec's round-trip timeout;
   * the candidates' role is the data source's login role.
   *
   * @param spec where and which key
   * @return the holder, or empty if nobody holds it
   * @throws AdvisoryLockException if the query fails (the SQLException is the cause)
   */
  public static Optional<Row> current(SessionOpener.Spec spec) {
    try (Connection conn = spec.dataSource().getConnection()) {
      int previous = conn.getNetworkTimeout();
      conn.setNetworkTimeout(SessionTerminator.DIRECT, spec.roundTripMillis());
      try {
        return Optional.ofNullable(leaders(conn, List.of(spec.key()), null).get(spec.key()));
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
