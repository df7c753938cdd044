package dev.retsu.lock.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.AdvisoryLock;
import dev.retsu.lock.AdvisoryLockLease;
import dev.retsu.lock.FailoverTiming;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LeaderLoopBuilder;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.Term;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Many candidates in this JVM: (a) real {@link LeaderLoop}s on one key, sharing one HikariCP pool
 * for standby attempts; (b) many keys with two candidates each, driven by a few scheduler threads
 * through {@link AdvisoryLock#tryAcquire()} and {@link AdvisoryLockLease#verify()} at the loop's
 * default cadence (a thread per loop does not fit: 10,000 keys would need 30,000 threads plus
 * 10,000 server processes, over this machine's pid limit).
 */
final class ScaleBenchmark {

  /**
   * Cost at rest.
   *
   * @param scenario what ran
   * @param candidates candidates in total
   * @param keys keys in use
   * @param statementsPerSecond server-wide statements per second
   * @param serverCpuPercent server CPU in percent of one core, -1 if unknown
   * @param connections client sessions of the benchmark database
   * @param settleMillis time for every key to have a leader, -1 if not measured
   * @param note anything unusual
   */
  record Result(
      String scenario,
      int candidates,
      int keys,
      double statementsPerSecond,
      double serverCpuPercent,
      int connections,
      long settleMillis,
      String note) {}

  private final BenchEnv env;
  private final Duration window;

  ScaleBenchmark(BenchEnv env, Duration window) {
    this.env = env;
    this.window = window;
  }

  /**
   * (a) n real leader loops on one key, default settings except the retry interval. POLL loops
   * share one HikariCP pool for their attempts; WAIT loops each keep their own waiting session, so
   * they get a non-pooling data source.
   */
  Result oneKey(int n, Duration retry, String mode) throws Exception {
    HikariConfig hc = new HikariConfig();
    hc.setJdbcUrl(env.jdbcUrl());
    hc.setUsername(env.user());
    hc.setPassword(env.password());
    hc.setMaximumPoolSize(16);
    hc.setPoolName("bench-scale-one-key");
    AtomicInteger leaders = new AtomicInteger();
    List<LeaderLoop> loops = new ArrayList<>();
    LockKey key = LockKey.of(ThreadLocalRandom.current().nextLong(1L << 40, 1L << 41));
    boolean wait = mode.equals("wait");
    PGSimpleDataSource direct = new PGSimpleDataSource();
    direct.setUrl(env.jdbcUrl());
    direct.setUser(env.user());
    if (!env.password().isEmpty()) {
      direct.setPassword(env.password());
    }
    try (HikariDataSource pooled = new HikariDataSource(hc)) {
      DataSource ds = wait ? direct : pooled;
      long t0 = System.nanoTime();
      for (int i = 0; i < n; i++) {
        LeaderLoopBuilder builder =
            LeaderLoop.builder(ds, key)
                .candidateId("scale-" + i)
                .retryInterval(retry)
                .listener(
                    new LeaderListener() {
                      @Override
                      public void onAcquired(Term term) {
                        leaders.incrementAndGet();
                      }
                    });
        RetsuTakeover.apply(builder, mode);
        LeaderLoop loop = builder.build();
        loops.add(loop);
        loop.start(ctx -> {});
      }
      FailoverBenchmark.await(Duration.ofSeconds(60), () -> leaders.get() >= 1, 10);
      long settle = (System.nanoTime() - t0) / 1_000_000;
      // let the first round of attempts (all at start) pass before measuring the steady state
      Thread.sleep(Math.min(retry.toMillis() + 1000, 16_000));
      ServerProbe.Load m = measure();
      String terms = leaders.get() == 1 ? "" : leaders.get() + " terms during the run; ";
      Duration slowestClose = closeAll(loops);
      loops.clear();
      String note = terms + "slowest close() " + slowestClose.toMillis() + " ms";
      return new Result(
          n
              + " loops on one key, "
              + (wait
                  ? "WAIT (one waiting session per standby)"
                  : "POLL, retry " + retry.toSeconds() + " s, attempts through one pool of 16"),
          n,
          1,
          m.statementsPerSecond(),
          m.cpuPercent(),
          m.connections(),
          settle,
          note);
    } finally {
      closeAll(loops);
    }
  }

  /** Closes loops concurrently (a WAIT standby may take a moment); returns the slowest close. */
  static Duration closeAll(List<LeaderLoop> loops) throws InterruptedException {
    AtomicLong slowest = new AtomicLong();
    List<Thread> closers = new ArrayList<>();
    int per = Math.max(1, loops.size() / 200);
    for (int i = 0; i < loops.size(); i += per) {
      List<LeaderLoop> part = loops.subList(i, Math.min(loops.size(), i + per));
      Thread t =
          new Thread(
              () -> {
                for (LeaderLoop l : part) {
                  long t0 = System.nanoTime();
                  l.close();
                  slowest.accumulateAndGet(System.nanoTime() - t0, Math::max);
                }
              },
              "retsu-lock-bench-scale-close");
      t.setDaemon(true);
      t.start();
      closers.add(t);
    }
    for (Thread t : closers) {
      t.join(60_000);
    }
    return Duration.ofNanos(slowest.get());
  }

  /** One key's two candidates, driven at the loop's default cadence. */
  private static final class Driven {
    final AdvisoryLock[] locks = new AdvisoryLock[2];
    final AdvisoryLockLease[] leases = new AdvisoryLockLease[2];
    volatile boolean refreshed;
  }

  /**
   * (b) keys with two candidates each, ramped up in steps, then closed and restarted at once.
   *
   * @param steps key counts to measure at, ascending
   * @param minFreeBytes stop ramping when the machine has less memory available than this
   */
  List<Result> manyKeys(int[] steps, long minFreeBytes) throws Exception {
    List<Result> results = new ArrayList<>();
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setUrl(env.jdbcUrl());
    ds.setUser(env.user());
    if (!env.password().isEmpty()) {
      ds.setPassword(env.password());
    }
    ScheduledExecutorService pool =
        Executors.newScheduledThreadPool(
            8,
            r -> {
              Thread t = new Thread(r, "retsu-lock-bench-scale-driver");
              t.setDaemon(true);
              return t;
            });
    List<Driven> keys = new ArrayList<>();
    AtomicLong failures = new AtomicLong();
    long base = ThreadLocalRandom.current().nextLong(1L << 42, 1L << 43);
    try {
      int reached = 0;
      long memoryAtStart = ServerProbe.memAvailable();
      for (int target : steps) {
        // each held key is one server session (about 2 MB): project the next step from the last
        long available = ServerProbe.memAvailable();
        long perKey = reached == 0 ? 0 : Math.max(0, (memoryAtStart - available) / reached);
        long projected = available - perKey * (target - reached);
        if (available < minFreeBytes || projected < minFreeBytes) {
          results.add(
              new Result(
                  "ramp stopped before " + target + " keys",
                  2 * reached,
                  reached,
                  -1,
                  -1,
                  -1,
                  -1,
                  String.format(
                      java.util.Locale.ROOT,
                      "%d MiB available, about %d KiB per key: %d keys would leave less than %d"
                          + " GiB",
                      available >> 20,
                      perKey >> 10,
                      target,
                      minFreeBytes >> 30)));
          break;
        }
        long t0 = System.nanoTime();
        for (int k = reached; k < target; k++) {
          Driven d = new Driven();
          for (int c = 0; c < 2; c++) {
            d.locks[c] =
                AdvisoryLock.builder(ds, LockKey.of(base + k))
                    .candidateId("k" + k + "-" + c)
                    .build();
          }
          keys.add(d);
          for (int c = 0; c < 2; c++) {
            schedule(pool, d, c, 0, failures);
          }
        }
        reached = target;
        boolean settled =
            FailoverBenchmark.await(
                Duration.ofSeconds(180), () -> keys.stream().allMatch(d -> d.refreshed), 20);
        long settle = (System.nanoTime() - t0) / 1_000_000;
        if (!settled) {
          results.add(
              new Result(
                  target + " keys x 2 candidates",
                  2 * target,
                  target,
                  -1,
                  -1,
                  -1,
                  -1,
                  "not every key had a leader within 180 s"));
          break;
        }
        Thread.sleep(3000);
        ServerProbe.Load m = measure();
        results.add(
            new Result(
                target + " keys x 2 candidates (driven, POLL defaults)",
                2 * target,
                target,
                m.statementsPerSecond(),
                m.cpuPercent(),
                m.connections(),
                settle,
                failures.get() > 0 ? failures.get() + " failed round trips" : ""));
      }
      // mass restart: every candidate closes (leaders release), then all start again at once
      for (Driven d : keys) {
        d.refreshed = false;
      }
      pool.shutdownNow();
      pool.awaitTermination(30, TimeUnit.SECONDS);
      closeLeases(keys);
      ScheduledExecutorService restarted =
          Executors.newScheduledThreadPool(
              8,
              r -> {
                Thread t = new Thread(r, "retsu-lock-bench-scale-driver-2");
                t.setDaemon(true);
                return t;
              });
      pool = restarted;
      long t0 = System.nanoTime();
      for (Driven d : keys) {
        for (int c = 0; c < 2; c++) {
          schedule(restarted, d, c, 0, failures);
        }
      }
      boolean settled =
          FailoverBenchmark.await(
              Duration.ofSeconds(300), () -> keys.stream().allMatch(d -> d.refreshed), 20);
      long settle = (System.nanoTime() - t0) / 1_000_000;
      results.add(
          new Result(
              "mass restart of " + keys.size() + " keys x 2 candidates",
              2 * keys.size(),
              keys.size(),
              -1,
              -1,
              -1,
              settled ? settle : -1,
              settled ? "" : "not settled within 300 s"));
    } finally {
      pool.shutdownNow();
      pool.awaitTermination(30, TimeUnit.SECONDS);
      closeLeases(keys);
    }
    return results;
  }

  private static void schedule(
      ScheduledExecutorService pool, Driven d, int c, long delayMillis, AtomicLong failures) {
    if (pool.isShutdown()) {
      return;
    }
    try {
      pool.schedule(() -> step(pool, d, c, failures), delayMillis, TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.RejectedExecutionException stopped) {
      // shutting down
    }
  }

  /**
   * One candidate's next action, at the loop's default cadence: attempt after a wait drawn from
   * 13.5 to 15 s (retryInterval shortened by up to retryJitter, as the loop does), or heartbeat
   * every 2 s while leading.
   */
  private static void step(ScheduledExecutorService pool, Driven d, int c, AtomicLong failures) {
    long retry =
        (long)
            (LeaderLoopBuilder.DEFAULT_RETRY_INTERVAL.toMillis()
                * (1
                    - LeaderLoopBuilder.DEFAULT_RETRY_JITTER
                        * ThreadLocalRandom.current().nextDouble()));
    long beat = FailoverTiming.DEFAULT.heartbeatInterval().toMillis();
    AdvisoryLockLease lease = d.leases[c];
    try {
      if (lease == null) {
        Optional<AdvisoryLockLease> got = d.locks[c].tryAcquire();
        if (got.isPresent()) {
          d.leases[c] = got.get();
          got.get().verify();
          d.refreshed = true;
          schedule(pool, d, c, beat, failures);
        } else {
          schedule(pool, d, c, retry, failures);
        }
      } else {
        lease.verify();
        schedule(pool, d, c, beat, failures);
      }
    } catch (RuntimeException e) {
      failures.incrementAndGet();
      if (d.leases[c] != null) {
        d.leases[c].close();
        d.leases[c] = null;
      }
      schedule(pool, d, c, retry, failures);
    }
  }

  private ServerProbe.Load measure() throws SQLException, InterruptedException {
    try (Connection c = env.connect()) {
      return ServerProbe.load(
          env,
          c,
          window,
          "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
              + " AND pid <> pg_backend_pid()");
    }
  }

  /** Ends every session the driven keys hold (leases are idempotent to close). */
  private static void closeLeases(List<Driven> keys) {
    keys.parallelStream()
        .forEach(
            d -> {
              for (int c = 0; c < 2; c++) {
                if (d.leases[c] != null) {
                  d.leases[c].close();
                  d.leases[c] = null;
                }
              }
            });
  }
}
