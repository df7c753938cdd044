package dev.retsu.lock.benchmarks;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What candidates cost while nothing happens: one leader and two standbys of one config, each
 * connecting as its own role so that {@code pg_stat_statements} (which groups by role) splits the
 * statements between leader and standbys; connections held are sampled once a second from {@code
 * pg_stat_activity}.
 */
final class IdleCostBenchmark {

  /**
   * One config's idle cost.
   *
   * @param config config name
   * @param leaderStatementsPerSecond statements per second of the leader
   * @param standbyStatementsPerSecond statements per second of one standby (mean of two)
   * @param leaderConnections mean connections held by the leader
   * @param standbyConnections mean connections held by one standby
   * @param leaderCpuPercent CPU time of the leader's JVM over the window, % of one core (-1: the
   *     platform does not report it)
   * @param standbyCpuPercent the same for one standby's JVM (mean of two)
   * @param note anything unusual
   */
  record Result(
      String config,
      double leaderStatementsPerSecond,
      double standbyStatementsPerSecond,
      double leaderConnections,
      double standbyConnections,
      double leaderCpuPercent,
      double standbyCpuPercent,
      String note) {

    /** A config that could not be measured, and why. */
    static Result unmeasured(String config, String note) {
      return new Result(config, -1, -1, -1, -1, -1, -1, note);
    }
  }

  private static final String[] ROLES = {"bench_c1", "bench_c2", "bench_c3"};
  private static final AtomicInteger KEYS = new AtomicInteger(5000);

  private final BenchEnv env;
  private final Duration window;

  IdleCostBenchmark(BenchEnv env, Duration window) throws SQLException {
    this.env = env;
    this.window = window;
    try (Connection c = env.connect();
        Statement s = c.createStatement()) {
      for (String role : ROLES) {
        s.execute(
            "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '"
                + role
                + "') THEN CREATE ROLE "
                + role
                + " LOGIN; END IF; END $$");
        s.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON shedlock, int_lock TO " + role);
        s.execute("GRANT pg_read_all_stats TO " + role);
      }
    }
  }

  Result run(FailoverBenchmark.Config config) throws Exception {
    if (!env.statementsExtension) {
      return Result.unmeasured(config.name(), "pg_stat_statements not available");
    }
    long key = KEYS.incrementAndGet();
    List<ChildCandidate> children = new ArrayList<>();
    try {
      children.add(launch(config, ROLES[0], key));
      Duration setup = config.window().plus(Duration.ofSeconds(60));
      if (!FailoverBenchmark.await(setup, () -> children.get(0).leading())) {
        return Result.unmeasured(config.name(), "no leader within " + setup);
      }
      children.add(launch(config, ROLES[1], key));
      children.add(launch(config, ROLES[2], key));
      FailoverBenchmark.await(
          setup, () -> children.stream().allMatch(c -> FailoverBenchmark.ready(env, c)), 50);
      Thread.sleep(Math.min(3000, config.template().retry().toMillis()));
      Map<String, Double> connSum = new HashMap<>();
      int samples = 0;
      long calls0;
      try (Connection c = env.connect()) {
        ServerProbe.resetStatements(c);
        long[] cpu0 = children.stream().mapToLong(IdleCostBenchmark::cpuNanos).toArray();
        long start = System.nanoTime();
        long end = start + window.toNanos();
        while (System.nanoTime() - end < 0) {
          for (Map.Entry<String, Integer> e : connectionsByRole(c).entrySet()) {
            connSum.merge(e.getKey(), (double) e.getValue(), Double::sum);
          }
          samples++;
          Thread.sleep(Math.min(1000, Math.max(1, (end - System.nanoTime()) / 1_000_000)));
        }
        long[] cpu1 = children.stream().mapToLong(IdleCostBenchmark::cpuNanos).toArray();
        double seconds = (System.nanoTime() - start) / 1e9;
        Map<String, Long> calls = callsByRole(c);
        calls0 = calls.getOrDefault(ROLES[0], 0L);
        String note = children.get(0).leading() ? "" : "leader changed during the window";
        double standby =
            (calls.getOrDefault(ROLES[1], 0L) + calls.getOrDefault(ROLES[2], 0L)) / 2.0 / seconds;
        double n = Math.max(1, samples);
        return new Result(
            config.name(),
            calls0 / seconds,
            standby,
            connSum.getOrDefault(ROLES[0], 0.0) / n,
            (connSum.getOrDefault(ROLES[1], 0.0) + connSum.getOrDefault(ROLES[2], 0.0)) / 2 / n,
            cpuPercent(cpu0, cpu1, seconds, 0, 1),
            cpuPercent(cpu0, cpu1, seconds, 1, 3),
            note);
      }
    } finally {
      for (ChildCandidate c : children) {
        c.close();
      }
    }
  }

  /** The JVM's CPU time so far (user and system), or -1 when the platform does not say. */
  private static long cpuNanos(ChildCandidate c) {
    return c.process.toHandle().info().totalCpuDuration().map(Duration::toNanos).orElse(-1L);
  }

  /** Mean CPU of children {@code from} to {@code to} (exclusive) over the window, % of a core. */
  private static double cpuPercent(long[] before, long[] after, double seconds, int from, int to) {
    double sum = 0;
    for (int i = from; i < to; i++) {
      if (before[i] < 0 || after[i] < 0) {
        return -1;
      }
      sum += (after[i] - before[i]) / 1e9;
    }
    return 100 * sum / (to - from) / seconds;
  }

  private ChildCandidate launch(FailoverBenchmark.Config config, String role, long key)
      throws java.io.IOException {
    return ChildCandidate.launch(
        config.template(), env.jdbcUrl(), role, config.name() + "-idle-" + role, key, env.logDir);
  }

  private static Map<String, Integer> connectionsByRole(Connection c) throws SQLException {
    Map<String, Integer> m = new HashMap<>();
    try (Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT usename, count(*) FROM pg_stat_activity WHERE usename LIKE 'bench_c%'"
                    + " GROUP BY usename")) {
      while (rs.next()) {
        m.put(rs.getString(1), rs.getInt(2));
      }
    }
    return m;
  }

  private static Map<String, Long> callsByRole(Connection c) throws SQLException {
    Map<String, Long> m = new HashMap<>();
    try (Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT r.rolname, sum(s.calls) FROM pg_stat_statements s"
                    + " JOIN pg_roles r ON r.oid = s.userid"
                    + " WHERE r.rolname LIKE 'bench_c%' GROUP BY r.rolname")) {
      while (rs.next()) {
        m.put(rs.getString(1), rs.getLong(2));
      }
    }
    return m;
  }
}
