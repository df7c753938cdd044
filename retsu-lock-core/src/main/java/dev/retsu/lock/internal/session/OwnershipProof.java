package dev.retsu.lock.internal.session;

import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * The ownership proof of one {@link LockSession}, one round trip bounded by the round-trip timeout
 * and the self-fencing deadline. While user code has not touched the session since the last full
 * proof it costs O(1): a session advisory lock ends only with its session or by an unlock that
 * session runs, so the same backend with our marker intact still holds every key it held. Otherwise
 * (or when the marker is gone) it reads {@code pg_locks} once for the session, and the same
 * statement applies the session's settings again when {@code RESET ALL} or {@code DISCARD} cleared
 * them. Runs with the session's I/O lock held. Stateless.
 */
final class OwnershipProof {

  private OwnershipProof() {}

  /** The keys the session no longer holds; bookkeeping updated when the proof succeeded. */
  static Set<LockKey> run(
      LockSession s, Connection conn, SessionSettings settings, int roundTripMillis)
      throws ProofException {
    Proofs proofs = s.proofs();
    long start = s.time().nanoTime();
    boolean full = proofs.needsFullProof();
    long left = TimeUnit.NANOSECONDS.toMillis(proofs.fence().nanosLeft());
    int timeout = (int) Math.max(1, Math.min(roundTripMillis, left));
    Set<LockKey> missing;
    try {
      int previous = conn.getNetworkTimeout();
      conn.setNetworkTimeout(SessionTerminator.DIRECT, timeout);
      missing = full ? full(s, conn, settings) : quick(s, conn, settings);
      if (missing == null) {
        full = true; // the marker was gone: the full proof ran after all
        missing = full(s, conn, settings);
      }
      conn.setNetworkTimeout(SessionTerminator.DIRECT, previous);
    } catch (SQLException e) {
      // Lost, or ownership unknown (the proof could not run on a live session): not proven.
      throw new ProofException(LossReason.SESSION_LOST, e);
    }
    proofs.owned(start, full);
    return missing;
  }

  /** Pid and marker; null when the marker is not ours. */
  private static Set<LockKey> quick(LockSession s, Connection conn, SessionSettings settings)
      throws SQLException, ProofException {
    try (Statement st = conn.createStatement();
        ResultSet rs = st.executeQuery(SessionSql.quickProof())) {
      rs.next();
      s.checkBackend(rs.getInt(1));
      return settings.marker().equals(rs.getString(2)) ? Set.of() : null;
    }
  }

  private static Set<LockKey> full(LockSession s, Connection conn, SessionSettings settings)
      throws SQLException, ProofException {
    try (PreparedStatement ps = conn.prepareStatement(SessionSql.fullProof())) {
      ps.setString(settings.bind(conn, ps, 1), settings.marker());
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        s.checkBackend(rs.getInt(1));
        if (rs.getArray(6) != null) {
          s.settingsReapplied();
        }
        return KeySql.missing(
            s.expected(), longs(rs.getArray(3)), longs(rs.getArray(4)), ints(rs.getArray(5)));
      }
    }
  }

  private static Long[] longs(Array a) throws SQLException {
    return a == null ? null : (Long[]) a.getArray();
  }

  private static Integer[] ints(Array a) throws SQLException {
    return a == null ? null : (Integer[]) a.getArray();
  }
}
