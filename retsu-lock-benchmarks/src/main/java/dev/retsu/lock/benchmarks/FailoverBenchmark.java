package dev.retsu.lock.benchmarks;

import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

/**
 * Candidates as separate JVMs on one PostgreSQL, each behind its own fault proxy. For each scenario
 * and repetition: wait for one leader and one ready standby, wait a random phase, inject the fault
 * into the leader, and measure from the fault to the first refresh of a term that began after the
 * fault. Times are epoch microseconds of the one machine's wall clock: the parent reads it right
 * before the fault, the children stamp each line when they print it.
 */
final class FailoverBenchmark {

  /** The faults injected into the leader. */
  enum Scenario {
    /** SIGTERM: the candidate's shutdown hook closes it. */
    CLOSE("graceful close (SIGTERM)"),
    /** SIGKILL of the leader's JVM. */
    KILL("kill -9 of the leader"),
    /** {@code pg_terminate_backend} of the leader's sessions. */
    TERMINATE("pg_terminate_backend of the leader's session"),
    /** The leader's proxy drops every byte both ways, without RST or FIN. */
    PARTITION("blackhole partition of the leader"),
    /**
     * SIGSTOP of the leader's JVM: a long GC pause or a frozen VM. Its kernel keeps answering
     * keepalives, so only {@code idle_session_timeout} frees the lock.
     */
    PAUSE("SIGSTOP of the leader (long GC, frozen VM)");

    final String title;

    Scenario(String title) {
      this.title = title;
    }
  }

  /** How a repetition ended. */
  enum Outcome {
    /** A new term began and refreshed: the gap is measured. */
    MOVED,
    /** The old leader kept leading (its lock did not depend on the session). */
    KEPT,
    /** Nobody led within the observation window. */
    TIMEOUT
  }

  /**
   * One library with one group of settings.
   *
   * @param name short name, e.g. {@code retsu-poll-1s}
   * @param library library and version
   * @param settings the settings in words
   * @param template candidate settings (url, id, key filled in per launch)
   * @param reps repetitions per scenario
   * @param window longest wait for a takeover after a fault
   * @param only the scenarios this config runs in; empty for every scenario of the run
   * @param idle whether the idle-cost part measures it
   */
  record Config(
      String name,
      String library,
      String settings,
      CandidateSpec template,
      int reps,
      Duration window,
      java.util.Set<Scenario> only,
      boolean idle) {

    Config {
      only = java.util.Set.copyOf(only);
    }

    /** A config measured in every scenario and at idle. */
    Config(
        String name,
        String library,
        String settings,
        CandidateSpec template,
        int reps,
        Duration window) {
      this(name, library, settings, template, reps, window, java.util.Set.of(), true);
    }

    /** Whether this config runs in the scenario. */
    boolean runs(Scenario scenario) {
      return only.isEmpty() || only.contains(scenario);
    }
  }

  /**
   * One measurement.
   *
   * @param config config name
   * @param scenario the fault
   * @param rep repetition, from 1
   * @param outcome how it ended
   * @param gapMicros fault to the first refresh of the new term (MOVED only), else -1
   * @param tokenMicros fault to the new leader's {@code Term.start()}: lock granted and fencing
   *     token taken, before any listener ran (retsu and the raw waiter, MOVED only; else -1)
   * @param acquireMicros fault to the start of the new term (MOVED only), else -1
   * @param overlapMicros how long after the new term began the old leader's work still ran (its
   *     last REFRESH, printed after its own check passed); 0 if never
   * @param claimMicros how long after the new term began the old leader had not yet reported its
   *     term's end (a claim, not an act: its checks may already fail); -1 when not measured
   * @param note what happened, for the log
   */
  record Sample(
      String config,
      Scenario scenario,
      int rep,
      Outcome outcome,
      long gapMicros,
      long tokenMicros,
      long acquireMicros,
      long overlapMicros,
      long claimMicros,
      String note) {}

  /**
   * What the old leader's JVM loaded around a graceful close: the classes stamped after the fault
   * (SIGTERM) and before its shutdown hook started, and from then until the new leader's {@code
   * Term.start()} (its lock granted and token taken, so after the old session ended).
   *
   * @param config config name
   * @param rep repetition
   * @param became how the old leader had become leader: {@code start-up} (it won the lock when it
   *     started) or {@code takeover} (it took over from a leader of an earlier repetition)
   * @param beforeHook classes loaded from SIGTERM to the shutdown hook, each {@code name@µs} (µs
   *     after SIGTERM)
   * @param hookToNewTerm classes loaded from the hook to the new leader's term start, likewise
   * @param hookMicros SIGTERM to the hook
   * @param newTermMicros SIGTERM to the new leader's term start
   */
  record ClassLoads(
      String config,
      int rep,
      String became,
      List<String> beforeHook,
      List<String> hookToNewTerm,
      long hookMicros,
      long newTermMicros) {}

  private static final AtomicInteger KEYS = new AtomicInteger(1000);
  private static final AtomicInteger IDS = new AtomicInteger();

  private final BenchEnv env;
  private final List<Scenario> scenarios;
  private final List<ChildCandidate> all = new ArrayList<>();
  private final boolean traceClassLoad;
  private volatile boolean stopOldLeader;
  private final List<ClassLoads> classLoads = new ArrayList<>();
  private final java.util.Set<String> tookOver = java.util.concurrent.ConcurrentHashMap.newKeySet();

  FailoverBenchmark(BenchEnv env, List<Scenario> scenarios) {
    this(env, scenarios, false);
  }

  /**
   * A failover benchmark whose children, with {@code traceClassLoad}, log every class they load
   * ({@code -Xlog:class+load}); each graceful close's old leader is then read into {@link
   * #classLoads()}.
   */
  FailoverBenchmark(BenchEnv env, List<Scenario> scenarios, boolean traceClassLoad) {
    this.env = env;
    this.scenarios = scenarios;
    this.traceClassLoad = traceClassLoad;
  }

  /**
   * With {@code on}, a terminate first freezes the old leader's JVM (SIGSTOP, before the fault's
   * stamp), so its handling of the FATAL, its log lines and its exit do not run on the machine's
   * cores while the standby takes over: as when the old leader runs on another machine. A
   * diagnostic ({@code --stop-old-leader on}); the default terminate leaves it running.
   */
  void stopOldLeader(boolean on) {
    this.stopOldLeader = on;
  }

  /** The class loads of every traced graceful close so far. */
  List<ClassLoads> classLoads() {
    return List.copyOf(classLoads);
  }

  /** Runs every scenario for one config; every child it started is gone when it returns. */
  List<Sample> run(Config config) throws Exception {
    return runInterleaved(List.of(config)).get(config.name());
  }

  /**
   * Runs every scenario for the configs, interleaved: repetition 1 of each config, then repetition
   * 2 of each, and so on, each repetition starting with the next config in turn. Each config keeps
   * its own key and its own two candidates, so the configs' JVMs stand side by side for the whole
   * scenario, and a drift of the machine's load over the run falls on every config alike instead of
   * on whichever ran last. Every child it started is gone when it returns.
   *
   * @return the samples of each config, by name, in the order of {@code configs}
   */
  Map<String, List<Sample>> runInterleaved(List<Config> configs) throws Exception {
    Map<String, List<Sample>> samples = new LinkedHashMap<>();
    for (Config c : configs) {
      samples.put(c.name(), new ArrayList<>());
    }
    try {
      for (Scenario scenario : scenarios) {
        List<Config> here = configs.stream().filter(c -> c.runs(scenario)).toList();
        Map<String, List<ChildCandidate>> live = new HashMap<>(); // each config's two candidates
        Map<String, Long> keys = new HashMap<>();
        here.forEach(c -> keys.put(c.name(), (long) KEYS.incrementAndGet()));
        int reps = here.stream().mapToInt(Config::reps).max().orElse(0);
        try {
          for (int rep = 1; rep <= reps; rep++) {
            for (Config config : turn(here, rep, Config::reps)) {
              List<ChildCandidate> own =
                  live.computeIfAbsent(config.name(), n -> new ArrayList<>());
              Sample s = repetition(config, scenario, rep, keys.get(config.name()), own);
              samples.get(config.name()).add(s);
              Progress.log("%s", describe(s, config.window()));
            }
          }
        } finally {
          live.values().forEach(children -> children.forEach(ChildCandidate::close));
        }
      }
    } finally {
      for (ChildCandidate c : all) {
        c.close();
      }
      all.clear();
    }
    return samples;
  }

  /**
   * The order of repetition {@code rep} (from 1) of an interleaved run: the items that still have
   * that repetition, starting with item {@code (rep - 1) mod size} and going round, so each item
   * goes first in turn.
   */
  static <T> List<T> turn(List<T> items, int rep, java.util.function.ToIntFunction<T> reps) {
    List<T> order = new ArrayList<>();
    for (int i = 0; i < items.size(); i++) {
      T item = items.get((i + rep - 1) % items.size());
      if (rep <= reps.applyAsInt(item)) {
        order.add(item);
      }
    }
    return order;
  }

  /**
   * One progress line that says what was measured, e.g. "failover of spring, PARTITION #1
   * (blackhole partition of the leader): new leader after 1601.3 ms; the old leader still acted
   * 1888.3 ms into the new term (two leaders, measured)". An overlap of a peer is a figure of that
   * peer, not a failure of the run; retsu's must be 0 (the smoke test asserts it).
   */
  static String describe(Sample s, Duration window) {
    String what =
        switch (s.outcome()) {
          case MOVED ->
              s.gapMicros() >= 0
                  ? String.format(Locale.ROOT, "new leader after %.1f ms", s.gapMicros() / 1e3)
                  : "new leader";
          case KEPT -> "the old leader kept leading (no takeover)";
          case TIMEOUT -> "no leader within " + window;
        };
    String overlap =
        s.overlapMicros() > 0
            ? String.format(
                Locale.ROOT,
                "; the old leader still acted %.1f ms into the new term (two leaders, measured)",
                s.overlapMicros() / 1e3)
            : "";
    return "failover of "
        + s.config()
        + ", "
        + s.scenario()
        + " #"
        + s.rep()
        + " ("
        + s.scenario().title
        + "): "
        + what
        + overlap;
  }

  private Sample repetition(
      Config config, Scenario scenario, int rep, long key, List<ChildCandidate> live)
      throws Exception {
    live.removeIf(c -> !c.alive() && closeQuietly(c));
    while (live.size() < 2) {
      live.add(launch(config, key));
    }
    Duration setup = config.window().plus(Duration.ofSeconds(60));
    if (!await(setup, () -> live.stream().allMatch(c -> ready(env, c)) && leaders(live) == 1, 50)) {
      throw new IllegalStateException(
          config.name()
              + " "
              + scenario
              + " #"
              + rep
              + ": no single leader with a ready standby"
              + " within "
              + setup
              + "; see "
              + env.logDir);
    }
    ChildCandidate leader = live.stream().filter(ChildCandidate::leading).findFirst().orElseThrow();
    long phaseMillis = Math.min(config.template().retry().toMillis(), 2000);
    Thread.sleep(ThreadLocalRandom.current().nextLong(phaseMillis + 1));
    long termsBefore = leader.terms().size();

    long fault;
    // A terminate's session and statement are ready before the fault's stamp: opening the
    // harness's own connection (a backend fork and a login) is not part of the takeover.
    boolean frozen = scenario == Scenario.TERMINATE && stopOldLeader;
    try (Terminator terminator =
        scenario == Scenario.TERMINATE ? Terminator.of(env, leader) : null) {
      if (frozen) {
        leader.pause(); // before the stamp: the signal's own process is not part of the takeover
      }
      fault = CandidateMain.nowMicros();
      inject(scenario, leader, terminator);
    }

    long keptAfter =
        fault
            + (config.template().ttl() == null
                        ? config.window()
                        : config.template().ttl().plus(config.template().retry().multipliedBy(2)))
                    .plusSeconds(1)
                    .toNanos()
                / 1000;
    BooleanSupplier settled =
        () ->
            newTermAfter(live, fault).isPresent()
                || (scenario == Scenario.TERMINATE && kept(config, leader, fault, keptAfter));
    await(config.window(), settled);
    Optional<Found> found = newTermAfter(live, fault);
    Outcome outcome;
    long gap = -1;
    long grant = -1;
    long acquire = -1;
    String note;
    if (found.isPresent()) {
      outcome = Outcome.MOVED;
      gap = found.get().span.firstRefresh() - fault;
      acquire = found.get().span.start() - fault;
      long start = found.get().span.start();
      grant =
          found.get().child.events().stream()
              .filter(e -> e.type().equals("TOKEN") && e.micros() >= fault && e.micros() <= start)
              .mapToLong(e -> e.micros() - fault)
              .max()
              .orElse(-1);
      note = "new term on " + found.get().child.id;
      if (!frozen) {
        // give the old leader a moment to report its own end, then stop it if it is partitioned
        await(Duration.ofSeconds(2), () -> !openTerm(leader));
      }
    } else if (leader.alive() && leader.leading() && leader.terms().size() == termsBefore) {
      outcome = Outcome.KEPT;
      note = "old leader still leads";
    } else {
      outcome = Outcome.TIMEOUT;
      note = "no leader within " + config.window();
    }
    if (scenario == Scenario.PAUSE) {
      // Resumed, the old leader must not act again; it reports its end when it fenced.
      leader.resume();
      if (found.isPresent()) {
        await(Duration.ofSeconds(2), () -> !openTerm(leader));
      }
      leader.kill();
      leader.awaitExit(10_000);
    } else if (scenario == Scenario.PARTITION || frozen) {
      leader.kill();
      leader.awaitExit(10_000);
    } else if (scenario != Scenario.TERMINATE
        || config.template().impl() == CandidateSpec.Impl.RETSU
        || config.template().impl() == CandidateSpec.Impl.RAW) {
      // retsu (EXIT policy) and the raw waiter end the process; peers stay on as candidates
      if (!leader.awaitExit(10_000)) {
        // Still shutting down (once, a pool's close waited 10 s for its closer thread): it is no
        // standby, yet it would count as a ready one in the next repetition, which would then
        // strike the new leader with nobody waiting and time out. Stop it here.
        Progress.log(
            "%s %s #%d: the old leader %s had not exited 10 s after the fault; killed",
            config.name(), scenario, rep, leader.id);
        live.remove(leader);
        closeQuietly(leader);
      }
    }
    long overlap = 0;
    long claim = -1;
    if (found.isPresent() && found.get().child != leader) {
      long newStart = found.get().span.start();
      // Acting overlap: the old leader's work ran (a REFRESH, printed after its check passed)
      // after the new term began.
      overlap =
          leader.events().stream()
              .filter(e -> e.type().equals("REFRESH") && e.micros() > newStart)
              .mapToLong(e -> e.micros() - newStart)
              .max()
              .orElse(0);
      if (scenario != Scenario.PAUSE && !frozen) {
        // Claimed overlap: it had not reported its term's end yet (a paused process cannot).
        claim = Math.max(0, Math.min(lastTermEnd(leader), CandidateMain.nowMicros()) - newStart);
      }
    }
    if (traceClassLoad && scenario == Scenario.CLOSE && found.isPresent()) {
      // the new leader's Term.start() (lock granted, token taken), else its ACQUIRED line
      long newTerm = grant >= 0 ? fault + grant : found.get().span.start();
      classLoads.add(classLoads(config, rep, leader, fault, newTerm));
    }
    if (found.isPresent()) {
      tookOver.add(found.get().child.id);
    }
    live.removeIf(c -> !c.alive() && closeQuietly(c));
    return new Sample(
        config.name(), scenario, rep, outcome, gap, grant, acquire, overlap, claim, note);
  }

  /**
   * Reads the old leader's class-load log: its HOOK line gives its wall clock and monotonic clock
   * at one moment, which places the fault and the new term (wall clock) on the log's monotonic
   * stamps.
   */
  private ClassLoads classLoads(
      Config config, int rep, ChildCandidate leader, long fault, long newTerm) throws IOException {
    ChildCandidate.Event hook =
        leader.events().stream().filter(e -> e.type().equals("HOOK")).findFirst().orElse(null);
    if (hook == null) {
      return new ClassLoads(
          config.name(), rep, became(leader), List.of(), List.of("(no HOOK line)@0"), -1, -1);
    }
    long hookNanos = Long.parseLong(hook.detail().trim());
    long faultNanos = hookNanos - (hook.micros() - fault) * 1000;
    long newTermNanos = hookNanos + (newTerm - hook.micros()) * 1000;
    List<String> before = new ArrayList<>();
    List<String> after = new ArrayList<>();
    java.nio.file.Path log = ChildCandidate.classLoadLog(env.logDir, leader.id);
    if (java.nio.file.Files.exists(log)) {
      for (String line : java.nio.file.Files.readAllLines(log)) {
        // [123456789ns] java.lang.Foo source: jrt:/java.base
        int end = line.indexOf("ns]");
        if (!line.startsWith("[") || end < 0) {
          continue;
        }
        long t = Long.parseLong(line.substring(1, end));
        String rest = line.substring(end + 3).trim();
        String name = rest.contains(" ") ? rest.substring(0, rest.indexOf(' ')) : rest;
        // each name with when it loaded, in µs after SIGTERM
        String stamped = name + "@" + (t - faultNanos) / 1000;
        if (t > faultNanos && t <= hookNanos) {
          before.add(stamped);
        } else if (t > hookNanos && t <= newTermNanos) {
          after.add(stamped);
        }
      }
    }
    return new ClassLoads(
        config.name(), rep, became(leader), before, after, hook.micros() - fault, newTerm - fault);
  }

  private String became(ChildCandidate leader) {
    return tookOver.contains(leader.id) ? "takeover" : "start-up";
  }

  /**
   * Whether the old leader demonstrably kept its lock after its session was terminated: ShedLock
   * printed a refresh after the fault (each one is a successful extension in the database), or the
   * peer still leads a TTL plus two retry intervals later with nobody else leading.
   */
  private static boolean kept(Config config, ChildCandidate leader, long fault, long keptAfter) {
    if (config.template().impl() == CandidateSpec.Impl.RETSU || !leader.leading()) {
      return false;
    }
    CandidateSpec.Impl impl = config.template().impl();
    if ((impl == CandidateSpec.Impl.SHEDLOCK || impl == CandidateSpec.Impl.RETSU_SHEDLOCK)
        && leader.events().stream()
            .anyMatch(e -> e.type().equals("REFRESH") && e.micros() > fault)) {
      return true;
    }
    return CandidateMain.nowMicros() > keptAfter;
  }

  private static boolean openTerm(ChildCandidate c) {
    List<ChildCandidate.TermSpan> t = c.terms();
    return !t.isEmpty() && t.get(t.size() - 1).end() == Long.MAX_VALUE;
  }

  private static long lastTermEnd(ChildCandidate c) {
    List<ChildCandidate.TermSpan> t = c.terms();
    return t.isEmpty() ? 0 : t.get(t.size() - 1).end();
  }

  private record Found(ChildCandidate child, ChildCandidate.TermSpan span) {}

  private static Optional<Found> newTermAfter(List<ChildCandidate> live, long fault) {
    Found best = null;
    for (ChildCandidate c : live) {
      for (ChildCandidate.TermSpan t : c.terms()) {
        if (t.start() >= fault
            && t.firstRefresh() >= 0
            && (best == null || t.firstRefresh() < best.span.firstRefresh())) {
          best = new Found(c, t);
        }
      }
    }
    return Optional.ofNullable(best);
  }

  /** Whether a child contends: it reported an attempt, leads, or (WAIT) is queued on the server. */
  static boolean ready(BenchEnv env, ChildCandidate c) {
    if (c.ready() || c.leading()) {
      return true;
    }
    return c.spec.mode().equals("wait") && env.waiting(c.id);
  }

  private static long leaders(List<ChildCandidate> live) {
    return live.stream().filter(ChildCandidate::leading).count();
  }

  private void inject(Scenario scenario, ChildCandidate leader, Terminator terminator)
      throws Exception {
    switch (scenario) {
      case CLOSE -> leader.terminate();
      case KILL -> leader.kill();
      case TERMINATE -> terminator.run();
      case PAUSE -> leader.pause();
      case PARTITION -> leader.proxy.blackhole();
    }
  }

  /**
   * {@code pg_terminate_backend} of the leader's lock session (retsu: the backend pid it reported),
   * else of all its sessions, on a session of the harness's opened in advance.
   */
  private record Terminator(
      ChildCandidate leader, Connection connection, PreparedStatement statement)
      implements AutoCloseable {

    static Terminator of(BenchEnv env, ChildCandidate leader) throws SQLException {
      int pid = leader.leaderBackendPid();
      Connection c = env.connect();
      try {
        PreparedStatement ps =
            c.prepareStatement(
                pid > 0
                    ? "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE pid = ?"
                    : "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                        + " WHERE split_part(application_name, '#', 1) = ?");
        if (pid > 0) {
          ps.setInt(1, pid);
        } else {
          ps.setString(1, "bench:" + leader.id);
        }
        return new Terminator(leader, c, ps);
      } catch (SQLException | RuntimeException e) {
        c.close();
        throw e;
      }
    }

    void run() throws SQLException {
      try (ResultSet rs = statement.executeQuery()) {
        rs.next();
        if (rs.getInt(1) == 0) {
          Progress.log("warning: no session of %s to terminate", leader.id);
        }
      }
    }

    @Override
    public void close() throws SQLException {
      connection.close();
    }
  }

  private ChildCandidate launch(Config config, long key) throws IOException {
    String id = config.name() + "-" + IDS.incrementAndGet();
    ChildCandidate c =
        ChildCandidate.launch(
            config.template(), env.jdbcUrl(), env.user(), id, key, env.logDir, traceClassLoad);
    all.add(c);
    return c;
  }

  private static boolean closeQuietly(ChildCandidate c) {
    c.close();
    return true;
  }

  /** Polls every 5 ms: for conditions on the children's events, which cost nothing to read. */
  static boolean await(Duration max, BooleanSupplier condition) throws InterruptedException {
    return await(max, condition, 5);
  }

  static boolean await(Duration max, BooleanSupplier condition, long pollMillis)
      throws InterruptedException {
    long deadline = System.nanoTime() + max.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline >= 0) {
        return false;
      }
      Thread.sleep(pollMillis);
    }
    return true;
  }
}
