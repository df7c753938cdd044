package dev.retsu.lock.internal.session;

import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link LockSession}'s statements on many keys at once, a group's: try a batch, unlock a batch.
 * Each runs with the session's I/O lock held and checks the backend. Stateless, thread-safe.
 */
final class BatchSql {

  private static final Logger LOG = LoggerFactory.getLogger(BatchSql.class);

  private BatchSql() {}

  static List<LockKey> tryLock(
      LockSession s, Connection conn, ReentrantLock io, List<LockKey> batch, int limit)
      throws SQLException, ProofException {
    io.lock();
    try {
      if (!s.isOpen()) {
        throw s.closed();
      }
      long start = s.time().nanoTime();
      List<LockKey> granted = new ArrayList<>();
      try (PreparedStatement ps = conn.prepareStatement(SessionSql.tryLockBatch())) {
        int next = KeySql.bindArrays(conn, ps, 1, batch);
        ps.setInt(next, s.id().pid());
        ps.setString(next + 1, s.marker());
        ps.setInt(next + 2, limit);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          s.checkBackend(rs.getInt(1));
          if (rs.getBoolean(2)) {
            throw new ProofException(
                LossReason.HOT_STANDBY_DETECTED,
                Refusals.hotStandby(batch.get(0), s.id().candidateId()));
          }
          if (!s.marker().equals(rs.getString(3))) {
            // RESET ALL or DISCARD through user SQL: nothing was locked; the next proof repairs.
            s.proofs().suspect();
            return List.of();
          }
          for (Integer o : (Integer[]) rs.getArray(4).getArray()) {
            granted.add(batch.get(o - 1));
          }
        }
      }
      s.proofs().alive(start);
      s.held(granted);
      return granted;
    } finally {
      io.unlock();
    }
  }

  static void unlock(LockSession s, Connection conn, ReentrantLock io, List<LockKey> keys)
      throws SQLException, ProofException {
    io.lock();
    try {
      if (!s.isOpen()) {
        return;
      }
      long start = s.time().nanoTime();
      try (PreparedStatement ps = conn.prepareStatement(SessionSql.unlockBatch())) {
        KeySql.bindArrays(conn, ps, 1, keys);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          s.checkBackend(rs.getInt(1));
          Integer[] notHeld = (Integer[]) rs.getArray(2).getArray();
          if (notHeld.length > 0) {
            LOG.warn(
                "{} {} released key(s) were no longer held by this session (user SQL unlocked"
                    + " them?), e.g. {}",
                s.id().context(),
                notHeld.length,
                keys.get(notHeld[0] - 1));
          }
        }
      }
      s.proofs().alive(start);
    } finally {
      io.unlock();
    }
  }
}
