package dev.retsu.lock.benchmarks;

import dev.retsu.lock.LeaderContext;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LockKey;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Work on a leader's session from another thread of the leader while the loop idles between
 * refreshes on that session (what a {@code @Scheduled @LeaderOnly} method does), against the same
 * statement on a plain connection in the same run: the time of {@code SELECT 1} every 100 ms, so
 * the difference is what the loop's idle wait costs a thread that wants the session (at most one
 * socket-wait slice, for the first call after the session went unused). Also {@code ensureLeader()}
 * from that thread, and from the task's own thread during a refresh: back to back, after work
 * outside the database, and right after a statement. A loop with the defaults (refresh 15 s,
 * heartbeat 2 s).
 */
final class HandOffBenchmark {

  /**
   * One timed operation.
   *
   * @param operation what was timed
   * @param n calls timed
   * @param p50Nanos median
   * @param p99Nanos 99th percentile
   * @param maxNanos longest
   */
  record Result(String operation, int n, long p50Nanos, long p99Nanos, long maxNanos) {}

  static final String RAW = "SELECT 1 on a plain connection, every 100 ms (baseline)";
  static final String OTHER_THREAD = "SELECT 1 on the leader's session from another thread";
  static final String CHECK_OTHER = "ensureLeader() from another thread, between refreshes";
  static final String CHECK_TASK = "ensureLeader() in the task, back to back, warm session";
  static final String CHECK_TASK_IDLE =
      "ensureLeader() in the task after 100 ms of work outside the database";
  static final String CHECK_TASK_BUSY = "ensureLeader() in the task right after a SELECT 1";
  static final String FIRST_OTHER =
      "SELECT 1 on the leader's session from another thread, first call after 3 s unused";

  private final BenchEnv env;

  HandOffBenchmark(BenchEnv env) {
    this.env = env;
  }

  List<Result> run(int iterations) throws Exception {
    List<Result> out = new ArrayList<>();
    try (Connection plain = env.connect()) {
      out.add(time(RAW, iterations, Duration.ofMillis(100), () -> selectOne(plain)));
    }
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setUrl(env.jdbcUrl());
    ds.setUser(env.user());
    if (!env.password().isEmpty()) {
      ds.setPassword(env.password());
    }
    AtomicReference<LeaderContext> term = new AtomicReference<>();
    CompletableFuture<long[]> inTask = new CompletableFuture<>();
    CompletableFuture<long[]> afterWork = new CompletableFuture<>();
    CompletableFuture<long[]> afterStatement = new CompletableFuture<>();
    LeaderLoop loop =
        LeaderLoop.builder(ds, LockKey.of(77_77, 1))
            .candidateId("bench-handoff")
            .refreshTimeout(Duration.ofMinutes(5))
            .build();
    try {
      loop.start(
          ctx -> {
            if (term.get() != null) {
              return;
            }
            // In the first refresh: ensureLeader() on a warm session, back to back; after work
            // outside the database; right after a statement of the task.
            long[] nanos = new long[iterations * 10];
            for (int i = 0; i < nanos.length; i++) {
              long start = System.nanoTime();
              ctx.ensureLeader();
              nanos[i] = System.nanoTime() - start;
            }
            inTask.complete(nanos);
            afterWork.complete(timeInTask(iterations, () -> Thread.sleep(100), ctx::ensureLeader));
            afterStatement.complete(
                timeInTask(iterations, () -> selectOne(ctx.connection()), ctx::ensureLeader));
            term.set(ctx);
          });
      out.add(summarise(CHECK_TASK, inTask.get(60, TimeUnit.SECONDS)));
      out.add(summarise(CHECK_TASK_IDLE, afterWork.get(iterations, TimeUnit.SECONDS)));
      out.add(summarise(CHECK_TASK_BUSY, afterStatement.get(60, TimeUnit.SECONDS)));
      while (term.get() == null) {
        Thread.onSpinWait();
      }
      LeaderContext ctx = term.get();
      long[] first = new long[Math.max(3, iterations / 40)];
      for (int i = 0; i < first.length; i++) {
        Thread.sleep(3_000); // longer than the loop's hand-over window after another thread's use
        long start = System.nanoTime();
        selectOne(ctx.connection());
        first[i] = System.nanoTime() - start;
      }
      out.add(summarise(FIRST_OTHER, first));
      out.add(
          time(
              OTHER_THREAD, iterations, Duration.ofMillis(100), () -> selectOne(ctx.connection())));
      out.add(time(CHECK_OTHER, iterations, Duration.ofMillis(100), ctx::ensureLeader));
    } finally {
      loop.close();
    }
    return out;
  }

  private static void selectOne(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT 1")) {
      rs.next();
    }
  }

  @FunctionalInterface
  interface Call {
    void run() throws Exception;
  }

  /** Times {@code check} after each {@code before}, on the task's thread. */
  private static long[] timeInTask(int iterations, Call before, Call check) {
    long[] nanos = new long[iterations];
    try {
      for (int i = 0; i < iterations; i++) {
        before.run();
        long start = System.nanoTime();
        check.run();
        nanos[i] = System.nanoTime() - start;
      }
    } catch (Exception e) {
      throw new IllegalStateException("A timed call in the task failed", e);
    }
    return nanos;
  }

  private static Result time(String operation, int iterations, Duration every, Call call)
      throws Exception {
    long[] nanos = new long[iterations];
    for (int i = 0; i < iterations; i++) {
      Thread.sleep(every.toMillis());
      long start = System.nanoTime();
      call.run();
      nanos[i] = System.nanoTime() - start;
    }
    return summarise(operation, nanos);
  }

  private static Result summarise(String operation, long[] nanos) {
    long[] sorted = nanos.clone();
    Arrays.sort(sorted);
    int n = sorted.length;
    return new Result(
        operation,
        n,
        sorted[n / 2],
        sorted[Math.min(n - 1, (int) Math.ceil(n * 0.99) - 1)],
        sorted[n - 1]);
  }
}
