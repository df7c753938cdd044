package dev.retsu.lock.ha;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Watches every node from the outside as a client connecting directly would: every 150 ms, per
 * node, a new connection to its direct address asks whether it is a primary and on which timeline.
 * A node that refuses, hangs (1 s bound) or is shutting down is DOWN. One thread per node, named
 * {@code retsu-lock-ha-monitor-<node>}; {@link #close()} stops them.
 */
public final class NodeMonitor implements AutoCloseable {

  /** What a node was at one sample. */
  public enum State {
    /** Accepts new sessions and is not in recovery: it grants advisory locks. */
    PRIMARY,
    /** Accepts sessions, in recovery (a hot standby). */
    REPLICA,
    /** No answer, an error, or a refusal. */
    DOWN
  }

  /**
   * One sample.
   *
   * @param nanos when the answer came (System.nanoTime)
   * @param node the node's name
   * @param state what it was
   * @param timeline its timeline when PRIMARY, else 0
   * @param detail the error, for DOWN
   */
  public record Sample(long nanos, String node, State state, int timeline, String detail) {}

  private static final String SQL =
      "SELECT pg_is_in_recovery(), CASE WHEN pg_is_in_recovery() THEN 0 ELSE "
          + PatroniCluster.TIMELINE_SQL
          + " END";

  private final List<Sample> samples = new CopyOnWriteArrayList<>();
  private final List<Thread> threads = new ArrayList<>();
  private volatile boolean running = true;

  /**
   * Starts watching.
   *
   * @param nodes the nodes
   */
  public NodeMonitor(List<PatroniCluster.Node> nodes) {
    for (PatroniCluster.Node n : nodes) {
      Thread t = new Thread(() -> watch(n), "retsu-lock-ha-monitor-" + n.name());
      t.setDaemon(true);
      threads.add(t);
      t.start();
    }
  }

  private void watch(PatroniCluster.Node n) {
    while (running) {
      long began = System.nanoTime();
      Sample s;
      try (Connection c = PatroniCluster.connect(n.directUrl(), 1);
          Statement st = c.createStatement();
          ResultSet rs = st.executeQuery(SQL)) {
        rs.next();
        boolean recovery = rs.getBoolean(1);
        s =
            new Sample(
                System.nanoTime(),
                n.name(),
                recovery ? State.REPLICA : State.PRIMARY,
                rs.getInt(2),
                "");
      } catch (SQLException e) {
        String m = String.valueOf(e.getMessage());
        s =
            new Sample(
                System.nanoTime(),
                n.name(),
                State.DOWN,
                0,
                m.length() > 80 ? m.substring(0, 80) : m);
      }
      samples.add(s);
      long waitMs = 150 - (System.nanoTime() - began) / 1_000_000;
      if (waitMs > 0) {
        try {
          Thread.sleep(waitMs);
        } catch (InterruptedException e) {
          return;
        }
      }
    }
  }

  /**
   * The samples so far.
   *
   * @return a copy, in arrival order
   */
  public List<Sample> samples() {
    return List.copyOf(samples);
  }

  /** Stops the threads and waits for them. */
  @Override
  public void close() {
    running = false;
    for (Thread t : threads) {
      t.interrupt();
      try {
        t.join(3000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
