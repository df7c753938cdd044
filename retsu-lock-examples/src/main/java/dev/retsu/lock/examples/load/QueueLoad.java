package dev.retsu.lock.examples.load;

import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import javax.sql.DataSource;

/**
 * Producers and consumers over N queues, so the gauges move: every tick it promotes due scheduled
 * messages, acknowledges (or, 1 in 100, dead-letters) what it claimed the tick before, enqueues
 * about {@code rate × tick} messages (one in ten scheduled a few seconds ahead; queue-1 gets the
 * most) and claims some back: consumers run 55% to 145% as fast as messages arrive, on a slow wave,
 * so each backlog builds up and drains. Every step is one statement; the rollup triggers keep
 * {@code retsu_queue_state} exact in the same transaction.
 *
 * <p>Not thread-safe: one thread drives it.
 */
public final class QueueLoad {

  public static final Duration TICK = Duration.ofMillis(200);

  /** Ticks per consumer-speed wave: 2 minutes. */
  public static final int WAVE_TICKS = 600;

  /**
   * Totals since this load started.
   *
   * @param enqueued messages enqueued
   * @param consumed messages acknowledged
   * @param deadLettered messages dead-lettered
   */
  public record Totals(long enqueued, long consumed, long deadLettered) {}

  private final DataSource dataSource;
  private final List<String> queues;
  private final double[] weights;
  private final int ratePerSecond;
  private final Random random;
  private final double[] carry;
  private List<Long> claimed = List.of();
  private long ticks;
  private long enqueued;
  private long consumed;
  private long deadLettered;

  /**
   * Creates a load; it does nothing until {@link #seed}, {@link #tick} or {@link #run}.
   *
   * @param dataSource where to run the queue statements; the schema must exist
   * @param queueCount queues {@code queue-1} .. {@code queue-N}
   * @param ratePerSecond messages enqueued per second, all queues
   * @param seed the random seed, for repeatable runs
   */
  public QueueLoad(DataSource dataSource, int queueCount, int ratePerSecond, long seed) {
    this.dataSource = dataSource;
    this.queues = names(queueCount);
    this.ratePerSecond = ratePerSecond;
    this.random = new Random(seed);
    this.weights = new double[queueCount];
    double sum = 0;
    for (int i = 0; i < queueCount; i++) {
      weights[i] = queueCount - i; // queue-1 busiest
      sum += weights[i];
    }
    for (int i = 0; i < queueCount; i++) {
      weights[i] /= sum;
    }
    this.carry = new double[queueCount];
  }

  static List<String> names(int count) {
    List<String> out = new ArrayList<>();
    for (int i = 1; i <= count; i++) {
      out.add("queue-" + i);
    }
    return out;
  }

  /**
   * Returns the queue names.
   *
   * @return {@code queue-1} .. {@code queue-N}
   */
  public List<String> queues() {
    return queues;
  }

  /**
   * Returns what this load did so far.
   *
   * @return the totals
   */
  public Totals totals() {
    return new Totals(enqueued, consumed, deadLettered);
  }

  /**
   * Enqueues a backlog: {@code perQueue} ready messages per queue, a few scheduled and dead.
   *
   * @param perQueue ready messages per queue
   * @throws SQLException on a database error
   */
  public void seed(int perQueue) throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      for (String q : queues) {
        enqueued += insert(c, q, perQueue, "ready", Duration.ZERO, Duration.ofSeconds(-30));
        enqueued += insert(c, q, perQueue / 10, "scheduled", Duration.ofSeconds(5), null);
        deadLettered += insert(c, q, perQueue / 50, "dead", Duration.ZERO, null);
      }
    }
  }

  /**
   * One tick of producing and consuming.
   *
   * @throws SQLException on a database error
   */
  public void tick() throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      promoteDue(c);
      settleClaimed(c);
      List<Long> next = new ArrayList<>();
      double perTick = ratePerSecond * (TICK.toMillis() / 1000.0);
      for (int i = 0; i < queues.size(); i++) {
        carry[i] += perTick * weights[i];
        int n = (int) carry[i];
        carry[i] -= n;
        int scheduled = 0;
        for (int k = 0; k < n; k++) {
          if (random.nextInt(10) == 0) {
            scheduled++;
          }
        }
        enqueued += insert(c, queues.get(i), n - scheduled, "ready", Duration.ZERO, null);
        enqueued +=
            insert(
                c,
                queues.get(i),
                scheduled,
                "scheduled",
                Duration.ofMillis(2000 + random.nextInt(8000)),
                null);
        int want = (int) Math.round(n * consumerSpeed(i) + 0.5 * random.nextDouble());
        next.addAll(claim(c, queues.get(i), want));
      }
      claimed = next;
      ticks++;
    }
  }

  /**
   * How fast queue {@code i}'s consumers keep up, 0.55 to 1.45 of its arrivals, on a slow wave (one
   * period per {@link #WAVE_TICKS}, each queue out of phase), so backlogs build up and drain and
   * the gauges show it.
   */
  private double consumerSpeed(int i) {
    double phase = 2 * Math.PI * (ticks / (double) WAVE_TICKS + i / (double) queues.size());
    return 1 + 0.4 * Math.sin(phase) + 0.05 * (random.nextDouble() * 2 - 1);
  }

  /**
   * Runs ticks until {@code stop} says so or {@code duration} (if positive) has passed, printing
   * progress every {@code progressInterval}.
   *
   * @param duration how long to run; null for until {@code stop}
   * @param progressInterval how often to hand {@code progress} a line
   * @param progress receives {@link #progressLine()}
   * @param stop checked every tick
   * @throws SQLException on a database error
   * @throws InterruptedException if interrupted while waiting for the next tick
   */
  public void run(
      Duration duration, Duration progressInterval, Consumer<String> progress, BooleanSupplier stop)
      throws SQLException, InterruptedException {
    long start = System.nanoTime();
    long end = duration == null ? Long.MAX_VALUE : start + duration.toNanos();
    long nextProgress = start + progressInterval.toNanos();
    long nextTick = start;
    while (!stop.getAsBoolean() && System.nanoTime() - end < 0) {
      tick();
      long now = System.nanoTime();
      if (now - nextProgress >= 0) {
        progress.accept(progressLine());
        nextProgress = now + progressInterval.toNanos();
      }
      nextTick += TICK.toNanos();
      long wait = nextTick - System.nanoTime();
      if (wait > 0) {
        Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
      } else {
        nextTick = System.nanoTime();
      }
    }
  }

  /**
   * Returns one progress line: what this load did and the current totals over all queues.
   *
   * @return e.g. {@code load: 4 queues at 20 msg/s | enqueued 120, consumed 98, dead-lettered 3 |
   *     now ready 19, ...}
   * @throws SQLException on a database error
   */
  public String progressLine() throws SQLException {
    long[] sums = new long[4];
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT coalesce(sum(ready), 0), coalesce(sum(in_flight), 0),"
                    + " coalesce(sum(scheduled), 0), coalesce(sum(dead), 0)"
                    + " FROM retsu_queue_state")) {
      rs.next();
      for (int i = 0; i < 4; i++) {
        sums[i] = rs.getLong(i + 1);
      }
    }
    return String.format(
        "load: %d queues at %d msg/s | enqueued %d, consumed %d, dead-lettered %d"
            + " | now ready %d, in flight %d, scheduled %d, dead %d",
        queues.size(),
        ratePerSecond,
        enqueued,
        consumed,
        deadLettered,
        sums[0],
        sums[1],
        sums[2],
        sums[3]);
  }

  private static int insert(
      Connection c, String queue, int count, String state, Duration delay, Duration backdate)
      throws SQLException {
    if (count <= 0) {
      return 0;
    }
    try (PreparedStatement ps =
        c.prepareStatement(
            "INSERT INTO retsu_queue_message (queue, state, available_at, enqueued_at, payload)"
                + " SELECT ?, ?, now() + make_interval(secs => ? + g * 0.001),"
                + " now() + make_interval(secs => ?), 'message ' || g"
                + " FROM generate_series(1, ?) g")) {
      double back = backdate == null ? 0 : backdate.toMillis() / 1000.0;
      ps.setString(1, queue);
      ps.setString(2, state);
      ps.setDouble(3, delay.toMillis() / 1000.0 + back);
      ps.setDouble(4, back);
      ps.setInt(5, count);
      return ps.executeUpdate();
    }
  }

  private static void promoteDue(Connection c) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.executeUpdate(
          "UPDATE retsu_queue_message SET state = 'ready' WHERE id IN ("
              + "SELECT id FROM retsu_queue_message WHERE state = 'scheduled'"
              + " AND available_at <= now() ORDER BY available_at LIMIT 1000"
              + " FOR UPDATE SKIP LOCKED)");
    }
  }

  private List<Long> claim(Connection c, String queue, int count) throws SQLException {
    List<Long> ids = new ArrayList<>();
    if (count <= 0) {
      return ids;
    }
    try (PreparedStatement ps =
        c.prepareStatement(
            "UPDATE retsu_queue_message SET state = 'in_flight' WHERE id IN ("
                + "SELECT id FROM retsu_queue_message WHERE queue = ? AND state = 'ready'"
                + " ORDER BY available_at LIMIT ? FOR UPDATE SKIP LOCKED) RETURNING id")) {
      ps.setString(1, queue);
      ps.setInt(2, count);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          ids.add(rs.getLong(1));
        }
      }
    }
    return ids;
  }

  /** Acknowledges last tick's claims (deletes them), dead-lettering about one in a hundred. */
  private void settleClaimed(Connection c) throws SQLException {
    if (claimed.isEmpty()) {
      return;
    }
    List<Long> ack = new ArrayList<>();
    List<Long> dead = new ArrayList<>();
    for (Long id : claimed) {
      (random.nextInt(100) == 0 ? dead : ack).add(id);
    }
    consumed += update(c, "DELETE FROM retsu_queue_message WHERE id = ANY (?)", ack);
    deadLettered +=
        update(c, "UPDATE retsu_queue_message SET state = 'dead' WHERE id = ANY (?)", dead);
    claimed = List.of();
  }

  private static int update(Connection c, String sql, List<Long> ids) throws SQLException {
    if (ids.isEmpty()) {
      return 0;
    }
    Array array = c.createArrayOf("bigint", ids.toArray());
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setArray(1, array);
      return ps.executeUpdate();
    } finally {
      array.free();
    }
  }
}
