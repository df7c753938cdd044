package dev.retsu.lock.examples.app;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.AdvisoryLock;
import dev.retsu.lock.LeaderInfo;
import dev.retsu.lock.examples.collector.QueueStateCollector;
import dev.retsu.lock.examples.collector.Schema;
import dev.retsu.lock.examples.http.ManagementServer;
import dev.retsu.lock.examples.load.QueueLoad;
import dev.retsu.lock.testing.EmbeddedPostgresServer;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.time.LocalTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The one-command failover demo: an embedded PostgreSQL, seeded queues under a light load, two or
 * three collector JVMs on consecutive management ports; it shows who leads and what each {@code
 * /metrics} exports, stops the leader (SIGTERM, as Ctrl-C would) and measures how long a standby
 * takes to take over; with three collectors it then terminates the new leader's session with {@code
 * pg_terminate_backend}, as an operator evicting a leader would. Cleans up everything it started,
 * also on Ctrl-C.
 */
public final class DemoCommand {

  private static final DateTimeFormatter CLOCK = DateTimeFormatter.ofPattern("HH:mm:ss.SSS");
  private static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(90);
  private static final int QUEUES = 4;
  private static final long NOT_YET = Long.MIN_VALUE;
  private static final int RATE = 20;
  private static final Duration PROGRESS_EVERY = Duration.ofSeconds(5);
  private static final Pattern READY_SAMPLE =
      Pattern.compile("^queue_messages_ready\\{[^}]*queue=\"([^\"]+)\"[^}]*} ([0-9.eE+-]+)$");

  private final Settings.Demo settings;
  private final PrintStream out;
  private final ReentrantLock outLock = new ReentrantLock();
  private final long t0 = System.nanoTime();
  private final List<Child> children = new ArrayList<>();
  private final List<String> summary = new ArrayList<>();
  private final AtomicBoolean stopLoad = new AtomicBoolean();
  private final AtomicBoolean cleanedUp = new AtomicBoolean();

  /** Set by Ctrl-C (SIGINT, SIGTERM): what fails from then on is the shutdown, not the demo. */
  private final AtomicBoolean interrupted = new AtomicBoolean();

  private final CountDownLatch interruptSeen = new CountDownLatch(1);
  private EmbeddedPostgresServer postgres;
  private HikariDataSource pool;
  private Thread loadThread;
  private String jdbcUrl;

  /**
   * Creates the demo.
   *
   * @param settings its settings
   * @param out where the timeline goes
   */
  public DemoCommand(Settings.Demo settings, PrintStream out) {
    this.settings = settings;
    this.out = out;
  }

  /**
   * Runs the demo and cleans up.
   *
   * @return the exit status: {@link Main#OK}, {@link Main#FAILED} or {@link Main#USAGE}
   */
  public int run() {
    // Keep the timeline readable: the demo's own PostgreSQL and pool only speak up on trouble. The
    // pool's broken-connection warnings carry a stack trace, and the demo says itself what broke.
    for (String quiet : List.of("io.zonky.test", "dev.retsu.lock.testing", "com.zaxxer.hikari")) {
      String property = "org.slf4j.simpleLogger.log." + quiet;
      if (System.getProperty(property) == null) {
        System.setProperty(property, quiet.equals("com.zaxxer.hikari") ? "error" : "warn");
      }
    }
    Thread hook =
        new Thread(
            () -> {
              interrupted.set(true);
              interruptSeen.countDown();
              cleanup();
            },
            "retsu-lock-examples-demo-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);
    try {
      for (int i = 0; i < settings.collectors(); i++) {
        requireFreePort(settings.basePort() + i);
      }
      out.println(
          "retsu-lock demo: "
              + settings.collectors()
              + " queue-state collectors contend for one PostgreSQL advisory lock; only the leader"
              + " exports queue gauges.");
      out.println();
      startDatabase();
      launchCollectors();
      Child leader = awaitNewLeader(t0, STARTUP_TIMEOUT);
      awaitExporting(leader);
      showReplicas();
      explainColumns();

      leader = stopLeaderGracefully(leader);
      if (!settings.quick() && running().size() >= 2) {
        terminateLeaderSession(leader);
      }

      out.println();
      out.println("Summary (retry/refresh interval " + Options.format(settings.interval()) + "):");
      summary.forEach(line -> out.println("  " + line));
      out.println(
          "  Takeover waits for a standby's next attempt: at most the retry interval after the"
              + " lock is freed (each standby wait is drawn from 90% to 100% of it: jitter only"
              + " shortens it).");
      return Main.OK;
    } catch (ConfigException e) {
      out.println("demo: " + e.getMessage());
      return Main.USAGE;
    } catch (Exception e) {
      if (ctrlC()) {
        return Main.OK; // Ctrl-C: the collectors and PostgreSQL went away on purpose
      }
      say("demo failed: " + e);
      for (Child c : children) {
        out.println("---- last lines of " + c.name + " ----");
        c.tail(40).forEach(out::println);
      }
      return Main.FAILED;
    } finally {
      cleanup();
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException shuttingDown) {
        // Ctrl-C: the hook is running cleanup() already
      }
    }
  }

  private void startDatabase() throws SQLException {
    say("starting an embedded PostgreSQL (binaries from the jar, run as nobody when root)");
    postgres = EmbeddedPostgresServer.builder().start();
    jdbcUrl = postgres.jdbcUrl("postgres");
    say("PostgreSQL is up: " + jdbcUrl + " (user " + postgres.user() + ")");
    HikariConfig config = new HikariConfig();
    config.setPoolName("retsu-lock-examples-demo");
    config.setJdbcUrl(jdbcUrl);
    config.setUsername(postgres.user());
    config.setMaximumPoolSize(3);
    pool = new HikariDataSource(config);
    try (Connection c = pool.getConnection()) {
      Schema.migrate(c);
    }
    QueueLoad load = new QueueLoad(pool, QUEUES, RATE, 42);
    int perQueue = settings.quick() ? 50 : 200;
    load.seed(perQueue);
    say(
        String.format(
            Locale.ROOT,
            "schema ready; seeded %d queues (queue-1..queue-%d) with %d messages each; light load"
                + " of %d msg/s in the background",
            QUEUES,
            QUEUES,
            perQueue,
            RATE));
    loadThread =
        new Thread(
            () -> {
              try {
                load.run(null, Duration.ofDays(1), line -> {}, stopLoad::get);
              } catch (SQLException e) {
                if (!stopLoad.get() && !interrupted.get()) {
                  say("load stopped: " + e);
                }
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            },
            "retsu-lock-examples-demo-load");
    loadThread.setDaemon(true);
    loadThread.start();
  }

  private void launchCollectors() throws IOException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    String classpath = System.getProperty("java.class.path");
    StringBuilder names = new StringBuilder();
    for (int i = 0; i < settings.collectors(); i++) {
      String name = "collector-" + (char) ('a' + i);
      int port = settings.basePort() + i;
      ProcessBuilder pb =
          new ProcessBuilder(
              java,
              "-Xmx128m",
              "-XX:+UseSerialGC",
              "-XX:TieredStopAtLevel=1",
              "-cp",
              classpath,
              Main.class.getName(),
              "collector");
      Map<String, String> env = pb.environment();
      env.put("RETSU_DATABASE__URL", jdbcUrl);
      env.put("RETSU_DATABASE__USER", postgres.user());
      env.remove("RETSU_DATABASE__PASSWORD");
      env.put("RETSU_WORKER__MANAGEMENT__PORT", Integer.toString(port));
      env.put("RETSU_WORKER__MANAGEMENT__ADDRESS", "127.0.0.1");
      env.put("RETSU_WORKER__STATE_COLLECTOR__INTERVAL", Options.format(settings.interval()));
      env.put("RETSU_WORKER__STATE_COLLECTOR__CANDIDATE_ID", name);
      env.put("RETSU_EXAMPLES__PARENT_PID", Long.toString(ProcessHandle.current().pid()));
      pb.redirectErrorStream(true);
      Child child = new Child(name, port, pb.start());
      children.add(child);
      names.append(i == 0 ? "" : ", ").append(name).append(" :").append(port);
    }
    say(
        "launched "
            + settings.collectors()
            + " collector JVMs ("
            + names
            + "), RETSU_WORKER__STATE_COLLECTOR__INTERVAL="
            + Options.format(settings.interval()));
  }

  /**
   * Waits until a running child logs the leadership line after {@code sinceNanos}, saying every few
   * seconds what each collector is doing, so that a slow start never looks like a hang.
   */
  private Child awaitNewLeader(long sinceNanos, Duration timeout) throws InterruptedException {
    long start = System.nanoTime();
    long[] nextProgress = {start + PROGRESS_EVERY.toNanos()};
    BooleanSupplier ready =
        () -> {
          if (newLeader(sinceNanos).isPresent()) {
            return true;
          }
          long now = System.nanoTime();
          if (now - nextProgress[0] >= 0) {
            nextProgress[0] = now + PROGRESS_EVERY.toNanos();
            StringBuilder states = new StringBuilder();
            for (Child c : children) {
              states.append(states.length() == 0 ? "" : ", ").append(c.name).append(' ');
              states.append(c.process.isAlive() ? c.state() : "exited");
            }
            say(
                String.format(
                    Locale.ROOT, "no leader yet after %.0f s: %s", (now - start) / 1e9, states));
          }
          return false;
        };
    if (await(timeout, ready) == null) {
      throw new IllegalStateException(
          "no collector became leader within " + timeout + ": " + collectorStates());
    }
    return newLeader(sinceNanos).orElseThrow();
  }

  /**
   * Whether the demo is being stopped (Ctrl-C). The terminal's SIGINT reaches the collectors and
   * PostgreSQL too, and they may fail the demo a moment before this JVM's hook runs: give the hook
   * that moment before calling a failure a failure.
   */
  private boolean ctrlC() {
    try {
      return interruptSeen.await(500, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return true;
    }
  }

  /** Each collector's state, or its exit status and last line: why nobody leads. */
  private String collectorStates() {
    StringBuilder sb = new StringBuilder();
    for (Child c : children) {
      sb.append(sb.length() == 0 ? "" : "; ").append(c.name).append(' ');
      if (c.process.isAlive()) {
        sb.append(c.state());
      } else {
        List<String> last = c.tail(1);
        sb.append("exited with status ").append(c.process.exitValue());
        if (!last.isEmpty()) {
          sb.append(" (last line: ").append(last.get(0).strip()).append(')');
        }
      }
    }
    return sb.toString();
  }

  private Optional<Child> newLeader(long sinceNanos) {
    return children.stream()
        .filter(
            c ->
                c.process.isAlive() && c.acquiredAt() != NOT_YET && c.acquiredAt() - sinceNanos > 0)
        .findFirst();
  }

  private void awaitExporting(Child leader) throws InterruptedException {
    if (await(
            Duration.ofSeconds(30),
            () -> {
              String metrics = get(leader.port, "/metrics");
              return metrics != null && metrics.contains("queue_messages_ready");
            })
        == null) {
      throw new IllegalStateException(leader.name + " leads but exports no queue gauges");
    }
    for (Child c : running()) {
      await(Duration.ofSeconds(30), () -> get(c.port, "/health/ready") != null);
    }
  }

  private Child stopLeaderGracefully(Child leader) throws InterruptedException {
    out.println();
    say(
        "stopping the leader "
            + leader.name
            + " with SIGTERM (as Ctrl-C would): it closes its lease, which ends its session and"
            + " frees the lock at once");
    String oldToken = fencingToken(leader);
    long killed = System.nanoTime();
    // SIGTERM through the handle: Process.destroy() would also close our end of its output.
    leader.process.toHandle().destroy();
    Child next = awaitNewLeader(killed, settings.interval().multipliedBy(3).plusSeconds(30));
    double takeover = (next.acquiredAt() - killed) / 1e9;
    leader.process.waitFor(30, TimeUnit.SECONDS);
    say(
        String.format(
            Locale.ROOT,
            "%s took over %.2f s after the SIGTERM (%s exited with status %s); fencing token %s"
                + " -> %s",
            next.name,
            takeover,
            leader.name,
            leader.process.isAlive() ? "?" : Integer.toString(leader.process.exitValue()),
            oldToken,
            termToken(next)));
    summary.add(
        String.format(
            Locale.ROOT,
            "%-50s takeover %5.2f s  (%s -> %s)",
            "leader stopped with SIGTERM (graceful):",
            takeover,
            leader.name,
            next.name));
    awaitExporting(next);
    showReplicas();
    return next;
  }

  private void terminateLeaderSession(Child leader) throws Exception {
    Optional<LeaderInfo> holder = AdvisoryLock.of(pool, QueueStateCollector.KEY).currentHolder();
    if (holder.isEmpty()) {
      throw new IllegalStateException("nobody holds the collector lock");
    }
    int pid = holder.get().pid();
    out.println();
    say(
        "evicting the leader "
            + leader.name
            + " as an operator would: SELECT pg_terminate_backend("
            + pid
            + ") on its backend pid; it must notice, stop exporting and exit non-zero");
    String oldToken = fencingToken(leader);
    long killed = System.nanoTime();
    try (Connection c = pool.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT pg_terminate_backend(?)")) {
      ps.setInt(1, pid);
      ps.execute();
    }
    Child next = awaitNewLeader(killed, settings.interval().multipliedBy(3).plusSeconds(30));
    double takeover = (next.acquiredAt() - killed) / 1e9;
    boolean exited = leader.process.waitFor(30, TimeUnit.SECONDS);
    say(
        String.format(
            Locale.ROOT,
            "%s took over %.2f s after the session was terminated; %s %s; fencing token %s -> %s",
            next.name,
            takeover,
            leader.name,
            exited
                ? "exited with status " + leader.process.exitValue()
                : "is still running (unexpected)",
            oldToken,
            termToken(next)));
    summary.add(
        String.format(
            Locale.ROOT,
            "%-50s takeover %5.2f s  (%s -> %s, old leader exit status %s)",
            "leader session terminated (pg_terminate_backend):",
            takeover,
            leader.name,
            next.name,
            exited ? Integer.toString(leader.process.exitValue()) : "?"));
    awaitExporting(next);
    showReplicas();
  }

  /** Says once what the replica lines' numbers mean; they are easy to misread. */
  private void explainColumns() {
    out.println(
        "      term N counts the terms of that one process: every collector's first term is 1,"
            + " also when it takes over.");
    out.println(
        "      token is the term's fencing token (timeline, checkpoint, transaction id in one text"
            + " that sorts like them), the cluster-wide order: each new leader's is greater.");
    out.println(
        "      pid is the PostgreSQL backend pid of the session that holds the lock (as in"
            + " pg_stat_activity), not a collector's OS pid.");
  }

  /** One line per running collector: role from /leader, and what its /metrics exports. */
  private void showReplicas() {
    say("what each replica reports (GET /leader, GET /metrics):");
    for (Child c : children) {
      if (!c.process.isAlive()) {
        out.printf(Locale.ROOT, "      %-12s :%d  (exited, status %d)%n", c.name, c.port, exit(c));
        continue;
      }
      String leaderJson = Optional.ofNullable(get(c.port, "/leader")).orElse("");
      String metrics = Optional.ofNullable(get(c.port, "/metrics")).orElse("");
      String role = field(leaderJson, "role");
      String term =
          "leader".equals(role)
              ? "term " + field(leaderJson, "term") + ", token " + field(leaderJson, "fencingToken")
              : "lock held by " + holderName(leaderJson);
      out.printf(
          Locale.ROOT,
          "      %-12s :%d  %-8s %-44s %s%n",
          c.name,
          c.port,
          "leader".equals(role) ? "LEADER" : role,
          term,
          describeMetrics(metrics));
    }
  }

  private static String describeMetrics(String metrics) {
    int series = 0;
    int jvm = 0;
    int lock = 0;
    Map<String, String> ready = new TreeMap<>();
    for (String line : metrics.split("\n")) {
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      series++;
      if (line.startsWith("jvm_") || line.startsWith("process_")) {
        jvm++;
      }
      if (line.startsWith("retsu_lock_")) {
        lock++;
      }
      Matcher m = READY_SAMPLE.matcher(line);
      if (m.matches()) {
        ready.put(m.group(1), m.group(2).replaceAll("\\.0$", ""));
      }
    }
    StringBuilder sb = new StringBuilder();
    sb.append(
        String.format(
            Locale.ROOT,
            "/metrics: %d series (jvm/process %d, retsu_lock %d), ",
            series,
            jvm,
            lock));
    if (ready.isEmpty()) {
      sb.append("no queue gauges");
    } else {
      sb.append("queue_messages_ready");
      ready.forEach((q, v) -> sb.append(' ').append(q).append('=').append(v));
    }
    return sb.toString();
  }

  /**
   * The new leader's token: its /leader may answer in the moment between its log line and its term
   * being published (token null), so ask again for up to 5 s.
   */
  private static String termToken(Child c) throws InterruptedException {
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    String token = fencingToken(c);
    while ((token.equals("null") || token.equals("?")) && System.nanoTime() < until) {
      TimeUnit.MILLISECONDS.sleep(20);
      token = fencingToken(c);
    }
    return token;
  }

  /** The fencing token a collector's /leader shows for its current term, or "?". */
  private static String fencingToken(Child c) {
    return field(Optional.ofNullable(get(c.port, "/leader")).orElse(""), "fencingToken");
  }

  private static String holderName(String json) {
    Matcher m =
        Pattern.compile("\"holder\":\\{\"pid\":(\\d+),\"candidate\":\"([^\"]*)\"").matcher(json);
    return m.find() ? m.group(2) + " (backend pid " + m.group(1) + ")" : "nobody";
  }

  private static String field(String json, String name) {
    Matcher m = Pattern.compile("\"" + name + "\":(\"([^\"]*)\"|[^,}]+)").matcher(json);
    if (!m.find()) {
      return "?";
    }
    return m.group(2) != null ? m.group(2) : m.group(1);
  }

  private List<Child> running() {
    return children.stream().filter(c -> c.process.isAlive()).toList();
  }

  private static int exit(Child c) {
    return c.process.isAlive() ? -1 : c.process.exitValue();
  }

  /**
   * Polls every 50 ms; returns a non-null marker when the condition held, null on timeout. Throws
   * at once when the demo's PostgreSQL has stopped: nothing the demo waits for can happen then.
   */
  private Boolean await(Duration timeout, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() - deadline < 0) {
      if (condition.getAsBoolean()) {
        return Boolean.TRUE;
      }
      if (postgres != null && postgres.postmasterPid() < 0 && !interrupted.get()) {
        throw new IllegalStateException(
            "PostgreSQL stopped (its server process exited), so no collector can lead or export: "
                + collectorStates());
      }
      Thread.sleep(50);
    }
    return null;
  }

  private static String get(int port, String path) {
    return ManagementServer.fetch(port, path);
  }

  private static void requireFreePort(int port) {
    try (ServerSocket s = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
      s.setReuseAddress(true);
    } catch (IOException e) {
      throw new ConfigException(
          "management port "
              + port
              + " is in use (--base-port "
              + port
              + " or one above it); pass another --base-port");
    }
  }

  private void say(String text) {
    double since = (System.nanoTime() - t0) / 1e9;
    outLock.lock();
    try {
      out.printf(Locale.ROOT, "%s  +%6.2fs  %s%n", LocalTime.now().format(CLOCK), since, text);
      out.flush();
    } finally {
      outLock.unlock();
    }
  }

  /** Stops the load, the collectors (SIGTERM, then SIGKILL after 10 s), the pool and PostgreSQL. */
  private void cleanup() {
    if (!cleanedUp.compareAndSet(false, true)) {
      return;
    }
    stopLoad.set(true);
    List<Child> alive = running();
    if (!alive.isEmpty() || postgres != null) {
      out.println();
      say(
          "cleaning up: stopping "
              + alive.size()
              + " collector(s), the load"
              + (postgres != null ? " and PostgreSQL" : ""));
    }
    for (Child c : alive) {
      c.process.toHandle().destroy();
    }
    for (Child c : children) {
      try {
        if (!c.process.waitFor(10, TimeUnit.SECONDS)) {
          c.process.destroyForcibly();
          c.process.waitFor(5, TimeUnit.SECONDS);
        }
      } catch (InterruptedException e) {
        c.process.destroyForcibly();
        Thread.currentThread().interrupt();
      }
      c.join();
    }
    if (loadThread != null) {
      try {
        loadThread.join(5000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    if (pool != null) {
      pool.close();
    }
    if (postgres != null) {
      postgres.close();
      say("done");
    }
  }

  /** A collector process and the thread that reads its output. */
  private final class Child {
    final String name;
    final int port;
    final Process process;
    private final List<String> lines = new ArrayList<>();
    private final ReentrantLock linesLock = new ReentrantLock();
    private final Thread reader;
    private final long launchedAt = System.nanoTime();
    private volatile long acquiredAt = NOT_YET;
    private volatile String state = "starting its JVM";

    Child(String name, int port, Process process) {
      this.name = name;
      this.port = port;
      this.process = process;
      this.reader = new Thread(this::pump, "retsu-lock-examples-demo-" + name);
      reader.setDaemon(true);
      reader.start();
    }

    long acquiredAt() {
      return acquiredAt;
    }

    /** What the collector said it is doing last: starting, contending, leading. */
    String state() {
      return state;
    }

    private void pump() {
      try (BufferedReader r =
          new BufferedReader(
              new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
        String line;
        while ((line = r.readLine()) != null) {
          long now = System.nanoTime();
          linesLock.lock();
          try {
            lines.add(line);
            if (lines.size() > 500) {
              lines.remove(0);
            }
          } finally {
            linesLock.unlock();
          }
          if (line.endsWith(CollectorCommand.ACQUIRED_LINE) && acquiredAt == NOT_YET) {
            acquiredAt = now;
          }
          if (line.endsWith(CollectorCommand.ACQUIRED_LINE)) {
            state = "leading";
          } else if (line.contains(CollectorCommand.STARTED_LINE)) {
            state = "contending for the lock";
            say(
                String.format(
                    Locale.ROOT,
                    "%-12s | up %.2f s after its launch, endpoint on :%d, contending for the lock",
                    name,
                    (now - launchedAt) / 1e9,
                    port));
          }
          if (line.contains("queue state metrics collector leadership")
              || line.contains(" ERROR ")
              || line.contains("exiting with status")) {
            int dash = line.indexOf(" - ");
            say(
                String.format(
                    Locale.ROOT, "%-12s | %s", name, dash >= 0 ? line.substring(dash + 3) : line));
          }
        }
      } catch (IOException e) {
        // the process is gone
      }
    }

    List<String> tail(int n) {
      linesLock.lock();
      try {
        return new ArrayList<>(lines.subList(Math.max(0, lines.size() - n), lines.size()));
      } finally {
        linesLock.unlock();
      }
    }

    void join() {
      try {
        reader.join(2000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
