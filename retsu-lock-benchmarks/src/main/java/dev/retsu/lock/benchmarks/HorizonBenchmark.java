package dev.retsu.lock.benchmarks;

import dev.retsu.lock.AttemptResult;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.TakeoverMode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLWarning;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * What a waiting standby costs VACUUM: standbys wait on a key a plain session holds while a loader
 * updates a table; every second the harness reads the oldest snapshot ({@code backend_xmin}) among
 * the standbys' sessions, every few seconds it runs {@code VACUUM (VERBOSE)} on the table and
 * records the dead tuples it could not remove, and it counts the standbys' re-arms and the lines
 * the server logged meanwhile. WAIT standbys at several {@code waitTimeout}s, and as controls a
 * POLL standby and a plain session blocked in {@code pg_advisory_lock}. Also measures, once, which
 * ways of waiting on an advisory lock hold a snapshot ({@link #waysOfWaiting()}).
 */
final class HorizonBenchmark {

  /**
   * One observed setup.
   *
   * @param name e.g. {@code wait-30s-x3}
   * @param mode {@code wait}, {@code poll} or {@code raw}
   * @param standbys how many
   * @param waitTimeout WAIT's longest single wait (null for the controls)
   * @param observe how long it is observed
   */
  record Setup(String name, String mode, int standbys, Duration waitTimeout, Duration observe) {}

  /**
   * What one setup cost.
   *
   * @param setup the setup
   * @param samples one-second samples taken
   * @param samplesWithSnapshot of those, samples where a standby's session held a snapshot
   * @param maxAgeXids the oldest standby snapshot's age in xids ({@code age(backend_xmin)}), max
   * @param maxAgeSeconds how long that snapshot had been held (now minus its statement's start),
   *     max
   * @param vacuums VACUUM runs
   * @param maxDeadNotRemovable the most dead tuples a VACUUM could not remove yet
   * @param lastDeadNotRemovable the same in the last VACUUM
   * @param rearms re-arms of all standbys (WAIT: attempts that ended in lock_timeout)
   * @param lockTimeoutErrors server log lines {@code ERROR: canceling statement due to lock
   *     timeout}, -1 without a server log
   * @param logLines all lines the server logged in the window, -1 without a server log
   * @param updatesPerSecond the loader's rate (each update one xid)
   * @param seconds the window's length
   */
  record Result(
      Setup setup,
      int samples,
      int samplesWithSnapshot,
      long maxAgeXids,
      double maxAgeSeconds,
      int vacuums,
      long maxDeadNotRemovable,
      long lastDeadNotRemovable,
      long rearms,
      long lockTimeoutErrors,
      long logLines,
      double updatesPerSecond,
      double seconds) {

    double perHourPerStandby(long count) {
      return count < 0 ? -1 : count * 3600.0 / seconds / setup.standbys();
    }
  }

  /**
   * One way of waiting on a lock, and whether the waiting session held a snapshot.
   *
   * @param way the statement(s)
   * @param protocol pgjdbc's extended protocol or simple query mode
   * @param waited whether the session was seen waiting on the lock
   * @param xminAge {@code age(backend_xmin)} while it waited after 10 other transactions, -1 when
   *     it held no snapshot ({@code backend_xmin} null)
   * @param waitEvent the session's {@code wait_event_type/wait_event}
   */
  record Way(String way, String protocol, boolean waited, long xminAge, String waitEvent) {}

  private static final Pattern DEAD =
      Pattern.compile("(\\d+) are dead but not yet removable", Pattern.CASE_INSENSITIVE);

  private static final long KEY_BASE = 7_100_000;

  private final BenchEnv env;
  private final boolean smoke;

  HorizonBenchmark(BenchEnv env, boolean smoke) {
    this.env = env;
    this.smoke = smoke;
  }

  /**
   * The setups of a run: WAIT for each timeout and standby count, observed for twice the timeout
   * (at least 10 s in a full run, at most {@code cap}), then the two controls with one standby (60
   * s, at most {@code cap}).
   */
  static List<Setup> setups(List<Duration> timeouts, int[] standbys, Duration cap, boolean smoke) {
    List<Setup> s = new ArrayList<>();
    for (int n : standbys) {
      for (Duration t : timeouts) {
        Duration observe = t.multipliedBy(2);
        if (!smoke && observe.compareTo(Duration.ofSeconds(10)) < 0) {
          observe = Duration.ofSeconds(10);
        }
        if (observe.compareTo(cap) > 0) {
          observe = cap;
        }
        s.add(new Setup("wait-" + t.toSeconds() + "s-x" + n, "wait", n, t, observe));
      }
    }
    Duration control = smoke ? Duration.ofSeconds(2) : Duration.ofSeconds(60);
    if (control.compareTo(cap) > 0) {
      control = cap;
    }
    s.add(new Setup("poll-1s-x1 (control)", "poll", 1, null, control));
    s.add(new Setup("raw pg_advisory_lock waiter (control)", "raw", 1, null, control));
    return s;
  }

  /** Runs one setup on a fresh table; every session it opened is closed when it returns. */
  Result run(Setup setup) throws Exception {
    long key = KEY_BASE + ThreadLocalRandom.current().nextInt(1_000_000);
    try (Connection admin = env.connect();
        Statement s = admin.createStatement()) {
      s.execute("DROP TABLE IF EXISTS horizon_load");
      s.execute("CREATE TABLE horizon_load(id int PRIMARY KEY, n bigint NOT NULL)");
      s.execute("INSERT INTO horizon_load SELECT g, 0 FROM generate_series(1, 1000) g");
      s.execute("VACUUM horizon_load");
    }
    Path log = env.serverLog();
    long logStart = log == null ? -1 : Files.size(log);
    List<LeaderLoop> loops = new ArrayList<>();
    AtomicLong rearms = new AtomicLong();
    AtomicBoolean stop = new AtomicBoolean();
    Connection holder = env.connect();
    Connection raw = null;
    CompletableFuture<Void> rawWait = null;
    Loader loader = new Loader(smoke ? 100 : 200);
    try {
      try (Statement h = holder.createStatement()) {
        h.execute("SELECT pg_advisory_lock(" + key + ")");
      }
      String prefix = "horizon-" + Long.toHexString(key) + "-";
      for (int i = 0; i < setup.standbys(); i++) {
        if (setup.mode().equals("raw")) {
          Properties p = new Properties();
          p.setProperty("user", env.user());
          if (!env.password().isEmpty()) {
            p.setProperty("password", env.password());
          }
          p.setProperty("ApplicationName", "retsu-lock:" + prefix + "raw");
          Connection c = DriverManager.getConnection(env.jdbcUrl(), p);
          raw = c;
          rawWait =
              CompletableFuture.runAsync(
                  () -> {
                    try (Statement w = c.createStatement()) {
                      w.execute("SELECT pg_advisory_lock(" + key + ")");
                    } catch (SQLException e) {
                      if (!stop.get()) {
                        throw new IllegalStateException("the raw waiter failed", e);
                      }
                    }
                  },
                  r -> named(r, "retsu-lock-bench-horizon-raw").start());
        } else {
          loops.add(standby(setup, key, prefix + i, rearms));
        }
      }
      loader.start();
      return observe(setup, prefix, loader, rearms, log, logStart);
    } finally {
      stop.set(true);
      loader.stop();
      for (LeaderLoop l : loops) {
        l.close();
      }
      if (raw != null) {
        raw.close();
      }
      holder.close();
      if (rawWait != null) {
        try {
          rawWait.get(10, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
          // closed on purpose while it waited
        }
      }
    }
  }

  private LeaderLoop standby(Setup setup, long key, String id, AtomicLong rearms) {
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setUrl(env.jdbcUrl());
    ds.setUser(env.user());
    if (!env.password().isEmpty()) {
      ds.setPassword(env.password());
    }
    var b =
        LeaderLoop.builder(ds, LockKey.of(key))
            .candidateId(id)
            .retryInterval(Duration.ofSeconds(1))
            .listener(
                new LeaderListener() {
                  @Override
                  public void onAttempt(AttemptResult result, Duration took, Throwable error) {
                    if (result == AttemptResult.HELD_ELSEWHERE) {
                      rearms.incrementAndGet();
                    }
                  }
                });
    if (setup.mode().equals("wait")) {
      b.takeover(TakeoverMode.WAIT).waitTimeout(setup.waitTimeout());
    } else {
      b.takeover(TakeoverMode.POLL);
    }
    LeaderLoop loop = b.build();
    loop.start(ctx -> ctx.ensureLeader());
    return loop;
  }

  private Result observe(
      Setup setup, String prefix, Loader loader, AtomicLong rearms, Path log, long logStart)
      throws Exception {
    Duration vacuumEvery =
        smoke
            ? Duration.ofSeconds(1)
            : setup.observe().dividedBy(6).compareTo(Duration.ofSeconds(5)) < 0
                ? Duration.ofSeconds(5)
                : setup.observe().dividedBy(6);
    int samples = 0;
    int withSnapshot = 0;
    long maxXids = -1;
    double maxSeconds = 0;
    int vacuums = 0;
    long maxDead = 0;
    long lastDead = 0;
    long rearmsBefore;
    long updatesBefore;
    // the standbys' first wait starts when they start: give them a moment to open their sessions
    Thread.sleep(500);
    rearmsBefore = rearms.get();
    updatesBefore = loader.updates.get();
    long t0 = System.nanoTime();
    long end = t0 + setup.observe().toNanos();
    long nextVacuum = t0 + vacuumEvery.toNanos();
    try (Connection c = env.connect();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT count(backend_xmin), max(age(backend_xmin)),"
                    + " max(extract(epoch FROM clock_timestamp() - coalesce(xact_start,"
                    + " query_start))) FILTER (WHERE backend_xmin IS NOT NULL)"
                    + " FROM pg_stat_activity WHERE application_name LIKE ?");
        Statement vacuum = c.createStatement()) {
      ps.setString(1, "retsu-lock:" + prefix + "%");
      long next = t0;
      while (System.nanoTime() - end < 0) {
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          samples++;
          if (rs.getInt(1) > 0) {
            withSnapshot++;
            maxXids = Math.max(maxXids, rs.getLong(2));
            maxSeconds = Math.max(maxSeconds, rs.getDouble(3));
          }
        }
        if (System.nanoTime() - nextVacuum >= 0) {
          lastDead = vacuum(vacuum);
          maxDead = Math.max(maxDead, lastDead);
          vacuums++;
          nextVacuum += vacuumEvery.toNanos();
        }
        next += 1_000_000_000L;
        long sleep = next - System.nanoTime();
        if (sleep > 0) {
          Thread.sleep(sleep / 1_000_000, (int) (sleep % 1_000_000));
        }
      }
      lastDead = vacuum(vacuum);
      maxDead = Math.max(maxDead, lastDead);
      vacuums++;
    }
    double seconds = (System.nanoTime() - t0) / 1e9;
    long errors = -1;
    long lines = -1;
    if (log != null) {
      String text = newLog(log, logStart);
      lines = text.lines().count();
      errors =
          text.lines().filter(l -> l.contains("canceling statement due to lock timeout")).count();
    }
    return new Result(
        setup,
        samples,
        withSnapshot,
        maxXids,
        maxSeconds,
        vacuums,
        maxDead,
        lastDead,
        rearms.get() - rearmsBefore,
        errors,
        lines,
        (loader.updates.get() - updatesBefore) / seconds,
        seconds);
  }

  private static String newLog(Path log, long from) throws IOException {
    byte[] all = Files.readAllBytes(log);
    int start = (int) Math.min(Math.max(0, from), all.length);
    return new String(all, start, all.length - start, StandardCharsets.UTF_8);
  }

  /** Runs VACUUM (VERBOSE) and returns the dead tuples it reported as not yet removable. */
  private static long vacuum(Statement s) throws SQLException {
    s.clearWarnings();
    s.execute("VACUUM (VERBOSE) horizon_load");
    long dead = 0;
    for (SQLWarning w = s.getWarnings(); w != null; w = w.getNextWarning()) {
      Matcher m = DEAD.matcher(String.valueOf(w.getMessage()));
      while (m.find()) {
        dead = Math.max(dead, Long.parseLong(m.group(1)));
      }
    }
    return dead;
  }

  /** Autocommit updates of random rows at a steady rate, one xid and one dead tuple each. */
  private final class Loader {
    final AtomicLong updates = new AtomicLong();
    private final int perSecond;
    private volatile boolean running = true;
    private Thread thread;
    private volatile Exception failure;

    Loader(int perSecond) {
      this.perSecond = perSecond;
    }

    void start() {
      thread =
          named(
              () -> {
                try (Connection c = env.connect();
                    PreparedStatement u =
                        c.prepareStatement("UPDATE horizon_load SET n = n + 1 WHERE id = ?")) {
                  long next = System.nanoTime();
                  long step = 1_000_000_000L / perSecond;
                  while (running) {
                    u.setInt(1, 1 + ThreadLocalRandom.current().nextInt(1000));
                    u.executeUpdate();
                    updates.incrementAndGet();
                    next += step;
                    long sleep = next - System.nanoTime();
                    if (sleep > 0) {
                      Thread.sleep(sleep / 1_000_000, (int) (sleep % 1_000_000));
                    }
                  }
                } catch (SQLException e) {
                  failure = e;
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              },
              "retsu-lock-bench-horizon-loader");
      thread.start();
    }

    void stop() throws InterruptedException {
      running = false;
      if (thread != null) {
        thread.join(10_000);
      }
      if (failure != null) {
        throw new IllegalStateException("the update loader failed", failure);
      }
    }
  }

  // ---------------------------------------------------------------- ways of waiting

  /**
   * Which ways of waiting on a lock hold a snapshot while they wait. For each way, a plain session
   * holds the lock, another waits on it the way named, ten transactions run elsewhere, and the
   * waiter's {@code backend_xmin} is read: null means it holds back nothing.
   */
  List<Way> waysOfWaiting() throws Exception {
    try (Connection admin = env.connect();
        Statement s = admin.createStatement()) {
      s.execute(
          "CREATE OR REPLACE PROCEDURE horizon_wait_plpgsql(k bigint) LANGUAGE plpgsql AS $$"
              + " BEGIN PERFORM pg_advisory_lock(k); END $$");
      s.execute(
          "CREATE OR REPLACE PROCEDURE horizon_wait_sql(k bigint) LANGUAGE sql AS $$"
              + " SELECT pg_advisory_lock(k) $$");
      s.execute(
          "CREATE OR REPLACE PROCEDURE horizon_wait_commit(k bigint) LANGUAGE plpgsql AS $$"
              + " BEGIN COMMIT; PERFORM pg_advisory_lock(k); END $$");
      s.execute("CREATE TABLE IF NOT EXISTS horizon_lockref(id int)");
    }
    List<Way> ways = new ArrayList<>();
    for (String protocol : List.of("extended", "simple")) {
      ways.add(advisory("SELECT pg_advisory_lock(k)", protocol, "SELECT pg_advisory_lock(%d)"));
      ways.add(
          advisory(
              "CALL of a PL/pgSQL procedure doing PERFORM pg_advisory_lock(k)",
              protocol,
              "CALL horizon_wait_plpgsql(%d)"));
      ways.add(
          advisory(
              "CALL of a PL/pgSQL procedure doing COMMIT, then PERFORM pg_advisory_lock(k)",
              protocol,
              "CALL horizon_wait_commit(%d)"));
      ways.add(
          advisory(
              "CALL of an SQL procedure doing SELECT pg_advisory_lock(k)",
              protocol,
              "CALL horizon_wait_sql(%d)"));
      ways.add(
          advisory(
              "DO block doing PERFORM pg_advisory_lock(k)",
              protocol,
              "DO $$ BEGIN PERFORM pg_advisory_lock(%d); END $$"));
      ways.add(lockTable(protocol, false));
      ways.add(lockTable(protocol, true));
    }
    ways.add(retsuWait());
    return ways;
  }

  private Way advisory(String way, String protocol, String sqlFormat) throws Exception {
    long key = KEY_BASE + 2_000_000 + ThreadLocalRandom.current().nextInt(1_000_000);
    try (Connection holder = env.connect()) {
      try (Statement h = holder.createStatement()) {
        h.execute("SELECT pg_advisory_lock(" + key + ")");
      }
      return measureWait(
          way,
          protocol,
          c -> {
            try (Statement w = c.createStatement()) {
              w.execute(String.format(java.util.Locale.ROOT, sqlFormat, key));
            }
          },
          () -> {
            try (Statement h = holder.createStatement()) {
              h.execute("SELECT pg_advisory_unlock(" + key + ")");
            }
          });
    }
  }

  /**
   * LOCK TABLE inside a transaction; {@code warm}: the waiting session resolved the table's name in
   * an earlier statement (its caches hold it), so the LOCK needs no catalog read before it waits.
   */
  private Way lockTable(String protocol, boolean warm) throws Exception {
    try (Connection holder = env.connect()) {
      holder.setAutoCommit(false);
      try (Statement h = holder.createStatement()) {
        h.execute("LOCK TABLE horizon_lockref IN ACCESS EXCLUSIVE MODE");
      }
      return measureWait(
          "reference: BEGIN; LOCK TABLE t IN ACCESS EXCLUSIVE MODE (another transaction holds it)"
              + (warm ? ", the table's name resolved by an earlier statement of the session" : ""),
          protocol,
          c -> {
            if (warm) {
              try (Statement w = c.createStatement()) {
                w.execute(
                    "SELECT 'horizon_lockref'::regclass::oid,"
                        + " has_table_privilege('horizon_lockref', 'SELECT')");
              }
            }
            c.setAutoCommit(false);
            try (Statement w = c.createStatement()) {
              w.execute("LOCK TABLE horizon_lockref IN ACCESS EXCLUSIVE MODE");
            }
            c.rollback();
          },
          holder::rollback);
    }
  }

  /** retsu's own WAIT standby: its waiting session, found by its application name. */
  private Way retsuWait() throws Exception {
    long key = KEY_BASE + 3_000_000 + ThreadLocalRandom.current().nextInt(1_000_000);
    String id = "horizon-way-" + Long.toHexString(key);
    try (Connection holder = env.connect()) {
      try (Statement h = holder.createStatement()) {
        h.execute("SELECT pg_advisory_lock(" + key + ")");
      }
      LeaderLoop loop =
          standby(
              new Setup("way", "wait", 1, Duration.ofMinutes(5), Duration.ZERO),
              key,
              id,
              new AtomicLong());
      try {
        return sample(
            "retsu-lock WAIT standby (its waiting statement)", "extended", "retsu-lock:" + id);
      } finally {
        loop.close();
      }
    }
  }

  /** A statement on a fresh connection; it waits until the release runs. */
  @FunctionalInterface
  private interface SqlAction {
    void run(Connection c) throws SQLException;
  }

  /** A release on the holder's side. */
  @FunctionalInterface
  private interface Release {
    void run() throws SQLException;
  }

  private Way measureWait(String way, String protocol, SqlAction wait, Release release)
      throws Exception {
    String app = "bench-way-" + ThreadLocalRandom.current().nextInt(1_000_000);
    Properties p = new Properties();
    p.setProperty("user", env.user());
    if (!env.password().isEmpty()) {
      p.setProperty("password", env.password());
    }
    p.setProperty("ApplicationName", app);
    if (protocol.equals("simple")) {
      p.setProperty("preferQueryMode", "simple");
    }
    try (Connection c = DriverManager.getConnection(env.jdbcUrl(), p)) {
      CompletableFuture<Void> waiting =
          CompletableFuture.runAsync(
              () -> {
                try {
                  wait.run(c);
                } catch (SQLException e) {
                  throw new IllegalStateException(way + " failed: SQLState " + e.getSQLState(), e);
                }
              },
              r -> named(r, "retsu-lock-bench-horizon-way").start());
      try {
        return sample(way, protocol, app);
      } finally {
        release.run();
        waiting.get(10, TimeUnit.SECONDS);
      }
    }
  }

  /** Waits until the session waits on a lock, runs ten transactions elsewhere, reads its xmin. */
  private Way sample(String way, String protocol, String applicationName) throws Exception {
    try (Connection c = env.connect();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT wait_event_type, wait_event, age(backend_xmin) FROM pg_stat_activity"
                    + " WHERE application_name = ? AND wait_event_type = 'Lock'");
        Statement xid = c.createStatement()) {
      ps.setString(1, applicationName);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (System.nanoTime() - deadline < 0) {
        try (ResultSet rs = ps.executeQuery()) {
          if (rs.next()) {
            break;
          }
        }
        Thread.sleep(20);
      }
      for (int i = 0; i < 10; i++) {
        xid.execute("SELECT pg_current_xact_id()");
      }
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return new Way(way, protocol, false, -1, "not seen waiting on a lock");
        }
        long age = rs.getLong(3);
        boolean none = rs.wasNull();
        return new Way(
            way, protocol, true, none ? -1 : age, rs.getString(1) + "/" + rs.getString(2));
      }
    }
  }

  private static Thread named(Runnable r, String name) {
    Thread t = new Thread(r, name);
    t.setDaemon(true);
    return t;
  }
}
