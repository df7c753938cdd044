package dev.retsu.lock.examples;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/**
 * The state of one queue, as the collector reads it from the rollup.
 *
 * @param queue the queue name
 * @param ready messages ready to be consumed
 * @param inFlight messages being processed
 * @param scheduled messages not available before a later time
 * @param dead dead-lettered messages
 * @param oldestReadyAgeSeconds how long the oldest ready message has been available, 0 if none
 */
record QueueState(
    String queue,
    long ready,
    long inFlight,
    long scheduled,
    long dead,
    double oldestReadyAgeSeconds) {

  /**
   * The state query: the rollup, plus the oldest ready message per queue from the (queue, state,
   * available_at) index. Run it on the lease's connection only.
   */
  static final String QUERY =
      """
      SELECT s.queue, s.ready, s.in_flight, s.scheduled, s.dead,
             coalesce(extract(epoch FROM now() - (
               SELECT m.available_at FROM retsu_queue_message m
               WHERE m.queue = s.queue AND m.state = 'ready'
               ORDER BY m.available_at LIMIT 1))::float8, 0) AS oldest_ready_age
      FROM retsu_queue_state s
      ORDER BY s.queue
      """;

  /**
   * Reads every queue's state.
   *
   * @param c the connection to read on: the leader's lease connection
   * @return one entry per queue, by name
   * @throws SQLException on a database error
   */
  static List<QueueState> read(Connection c) throws SQLException {
    List<QueueState> out = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(QUERY);
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        out.add(
            new QueueState(
                rs.getString(1),
                rs.getLong(2),
                rs.getLong(3),
                rs.getLong(4),
                rs.getLong(5),
                Math.max(0, rs.getDouble(6))));
      }
    }
    return out;
  }
}
