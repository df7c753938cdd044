package dev.retsu.lock.internal.session;

import dev.retsu.lock.AdvisoryLockException;
import dev.retsu.lock.LockHolder;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.util.Optional;

/** Who holds a key right now, read on a connection borrowed for this one query. Stateless. */
public final class Holders {

  private Holders() {}

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
