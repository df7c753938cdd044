package dev.retsu.lock.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.AdvisoryLock;
import dev.retsu.lock.AdvisoryLockLease;
import dev.retsu.lock.LockKey;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The cost of the library's hot statements as the server's lock table grows: one filler session
 * holds L advisory locks, and for each L the benchmark times, one call at a time on loopback,
 *
 * <ul>
 *   <li>the ownership proof of a lease whose session nothing else used since the last proof (what
 *       an idle leader's heartbeat sends);
 *   <li>the proof right after user SQL ran on the lease's session (it reads {@code pg_locks});
 *   <li>a standby's attempt on a key held elsewhere ({@code tryAcquire} through a HikariCP pool);
 *   <li>for contrast, the {@code pg_locks} ownership query every heartbeat sent before.
 * </ul>
 */
final class ProofCostBenchmark {

  /**
   * One operation at one lock-table size.
   *
   * @param locksOnServer advisory locks the filler session holds
   * @param operation what was timed
   * @param n calls timed
   * @param p50Nanos median
   * @param p99Nanos 99th percentile
   */
  record Result(int locksOnServer, String operation, int n, long p50Nanos, long p99Nanos) {}

  static final String UNTOUCHED = "proof, session untouched since the last proof";
  static final String TOUCHED = "proof right after user SQL on the session";
  static final String ATTEMPT = "attempt on a key held elsewhere (HikariCP)";
  static final String OLD = "pg_locks ownership query (the former heartbeat)";

  private static final String OLD_QUERY =
      "SELECT pg_catalog.pg_backend_pid(), EXISTS (SELECT 1 FROM pg_catalog.pg_locks l WHERE"
          + " l.locktype = 'advisory' AND l.granted AND l.pid = pg_catalog.pg_backend_pid() AND"
          + " l.objsubid = 2 AND l.classid = 7 AND l.objid = 7)";

  private final BenchEnv env;

  ProofCostBenchmark(BenchEnv env) {
    this.env = env;
  }

  List<Result> run(int[] lockCounts, int iterations) throws SQLException {
    List<Result> results = new ArrayList<>();
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(env.jdbcUrl());
    config.setUsername(env.user());
    if (!env.password().isEmpty()) {
      config.setPassword(env.password());
    }
    config.setMaximumPoolSize(2);
    config.setPoolName("bench-proof");
    try (HikariDataSource pool = new HikariDataSource(config);
        Connection filler = env.connect();
        Connection oldStyle = env.connect()) {
      LockKey key = LockKey.of(7, 7);
      AdvisoryLock mine = AdvisoryLock.builder(pool, key).candidateId("proof-bench").build();
      AdvisoryLock other = AdvisoryLock.builder(pool, key).candidateId("proof-bench-2").build();
      try (AdvisoryLockLease lease = mine.tryAcquire().orElseThrow()) {
        try (Statement s = oldStyle.createStatement()) {
          s.execute("SELECT pg_advisory_lock(7, 8)");
        }
        for (int locks : lockCounts) {
          hold(filler, locks);
          Progress.log("proof cost: %d locks on the server", locks);
          results.add(time(locks, UNTOUCHED, iterations, lease::verify));
          results.add(
              time(
                  locks,
                  TOUCHED,
                  iterations,
                  lease::verify,
                  () ->
                      lease.withConnection(
                          c -> {
                            try (Statement s = c.createStatement()) {
                              return s.execute("SELECT 1");
                            }
                          })));
          results.add(
              time(
                  locks,
                  ATTEMPT,
                  iterations,
                  () -> {
                    if (other.tryAcquire().isPresent()) {
                      throw new IllegalStateException("the key was free");
                    }
                  }));
          try (PreparedStatement ps = oldStyle.prepareStatement(OLD_QUERY)) {
            results.add(
                time(
                    locks,
                    OLD,
                    iterations,
                    () -> {
                      try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                      }
                    }));
          }
        }
      }
      hold(filler, 0);
    }
    return results;
  }

  /** Makes the filler session hold exactly {@code count} advisory locks. */
  private static void hold(Connection filler, int count) throws SQLException {
    try (Statement s = filler.createStatement()) {
      s.execute("SELECT pg_advisory_unlock_all()");
      if (count > 0) {
        s.execute(
            "SELECT count(pg_advisory_lock(424242, g)) FROM generate_series(1, " + count + ") g");
      }
    }
  }

  @FunctionalInterface
  interface Call {
    void run() throws Exception;
  }

  private static Result time(int locks, String operation, int iterations, Call call)
      throws SQLException {
    return time(locks, operation, iterations, call, () -> {});
  }

  /** Times {@code call} after an untimed {@code before}, each {@code iterations} times. */
  private static Result time(int locks, String operation, int iterations, Call call, Call before)
      throws SQLException {
    long[] nanos = new long[iterations];
    try {
      for (int i = 0; i < iterations / 10; i++) { // warm-up
        before.run();
        call.run();
      }
      for (int i = 0; i < iterations; i++) {
        before.run();
        long start = System.nanoTime();
        call.run();
        nanos[i] = System.nanoTime() - start;
      }
    } catch (SQLException e) {
      throw e;
    } catch (Exception e) {
      throw new IllegalStateException(operation + " failed at " + locks + " locks", e);
    }
    Arrays.sort(nanos);
    return new Result(
        locks,
        operation,
        iterations,
        nanos[iterations / 2],
        nanos[Math.min(iterations - 1, (int) Math.ceil(iterations * 0.99) - 1)]);
  }
}
