package dev.retsu.lock.examples.collector;

import dev.retsu.lock.micrometer.QueueStateSnapshot;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;

/** The collector's state query: one small read of the rollup, on the connection it is given. */
public final class QueueStateQuery {

  /**
   * The rollup, plus the oldest ready message per queue from the {@code (queue, state,
   * available_at)} index (one index probe per queue).
   */
  public static final String SQL =
      """
      SELECT s.queue, s.ready, s.in_flight, s.scheduled, s.dead,
             greatest(coalesce(extract(epoch FROM clock_timestamp() - (
               SELECT m.available_at FROM retsu_queue_message m
               WHERE m.queue = s.queue AND m.state = 'ready'
               ORDER BY m.available_at LIMIT 1))::float8, 0), 0) AS oldest_ready_age
      FROM retsu_queue_state s
      ORDER BY s.queue
      """;

  private QueueStateQuery() {}

  /**
   * Reads every queue's state.
   *
   * @param c where to read: for the collector, always the lease's connection
   * @return the snapshot, with how long the read took
   * @throws SQLException on a database error
   */
  public static QueueStateSnapshot read(Connection c) throws SQLException {
    long start = System.nanoTime();
    QueueStateSnapshot.Builder snapshot = QueueStateSnapshot.builder();
    try (PreparedStatement ps = c.prepareStatement(SQL);
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        snapshot.queue(
            rs.getString(1),
            rs.getLong(2),
            rs.getLong(3),
            rs.getLong(4),
            rs.getLong(5),
            rs.getDouble(6));
      }
    }
    return snapshot.collectionDuration(Duration.ofNanos(System.nanoTime() - start)).build();
  }
}
