package dev.retsu.lock.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.TakeoverMode;
import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.fakes.TestLoops;
import dev.retsu.lock.faults.FaultCandidate.Action;
import dev.retsu.lock.faults.FaultCandidate.Phase;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.PostgresServer.ShutdownMode;
import dev.retsu.lock.testing.TermChecker;
import dev.retsu.lock.testing.TestDatabase;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The fault suite: candidates are separate JVMs ({@link FaultCandidate}) behind fault proxies,
 * whose leader tasks take time (a random wait before {@code ensureLeader()} and one after it until
 * the effect). Each round arms a phase of the leader, drawn from a seeded {@link Random} (before
 * the check, after it, inside an open transaction, between refreshes, inside {@code close()}),
 * injects the fault when the leader reaches it, and waits for a new term and for the hit term to
 * end. {@link TermChecker} then proves that no candidate passed {@code ensureLeader()} once a newer
 * term had started, that a lock only the library can release is never released while its holder
 * acts, that tokens increase and every term ends with a reason; it measures the residual window.
 *
 * <p>Every scenario runs with polling and with waiting standbys ({@link TakeoverMode}), {@code
 * retsu.faults.rounds} times (1 by default, more under {@code -Pfaults-full}); the seed is {@code
 * retsu.faults.seed}. Figures go to {@code target/fault-results.tsv} (scenario, round, ms, fault
 * and phase): the takeover (fault to the first check of a new term), {@code .check-after-fault}
 * (the last check of the hit term after the fault), {@code .residual} (the hit term's effect after
 * the next term's start) and, per scenario, {@code .residual-window} and {@code .smallest-gap}.
 */
@ExtendWith(PostgresExtension.class)
class FaultInjectionIntegrationTest {

  static final Duration WITHIN = Duration.ofSeconds(60);
  static final int ROUNDS = Integer.getInteger("retsu.faults.rounds", 1);
  private static final int RANDOM_ROUNDS = Integer.getInteger("retsu.faults.randomRounds", 2);
  static final long SEED = Long.getLong("retsu.faults.seed", 20261130L);

  /**
   * How long an armed phase lasts at least: the parent injects when it reads PHASE, and the fault
   * must land before the phase is over (a termination opens a connection first). Longer than a
   * polling standby's retry interval (200 ms, jittered) plus its attempt, so that when the fault
   * frees the lock, the successor's term has begun before the hit leader's task reaches its check;
   * well inside the 1 s task timeout.
   */
  static final long LINGER_MS = 600;

  /** The role-level idle-in-transaction timeout, and how long the task idles past it. */
  private static final long IDLE_IN_TX_TIMEOUT_MS = 500;

  private static final long IDLE_MS = 900;

  /** A pause longer than idle_session_timeout, so the server ends the paused leader's session. */
  private static final Duration PAUSE = FaultTiming.IDLE_SESSION.plusSeconds(2);

  private static final Set<Phase> ANY = EnumSet.allOf(Phase.class);
  private static final Set<Phase> MID_TASK = EnumSet.of(Phase.PRE, Phase.POST, Phase.TX);
  private static final Set<Phase> LEADING =
      EnumSet.of(Phase.PRE, Phase.POST, Phase.TX, Phase.BETWEEN);

  /** Injects a fault into the leader's term once the leader is in the armed phase. */
  @FunctionalInterface
  interface Injector {
    void inject(Fleet fleet, Fleet.Member leader, String term, TestDatabase db) throws Exception;
  }

  /**
   * A fault.
   *
   * @param name its name in results
   * @param phases where it may be injected
   * @param action what the candidate itself does at the phase ({@link Action#NONE}: the parent
   *     injects)
   * @param lingerMs how long the armed phase lasts at least
   * @param delayMs for a fault the candidate does itself: from its PHASE line to the moment the
   *     fault strikes (e.g. the server's timeout firing during an idle wait)
   * @param serverSide whether it can free the lock without the library (see {@link
   *     TermChecker.Injection})
   * @param injector what the parent does at the phase
   * @param allowanceNanos how long after it a check of the hit term may still pass (see {@link
   *     TermChecker.Injection#allowanceNanos()}): zero but for user SQL only a later proof finds
   */
  record Fault(
      String name,
      Set<Phase> phases,
      Action action,
      long lingerMs,
      long delayMs,
      boolean serverSide,
      Injector injector,
      long allowanceNanos) {

    Fault(
        String name,
        Set<Phase> phases,
        Action action,
        long lingerMs,
        long delayMs,
        boolean serverSide,
        Injector injector) {
      this(name, phases, action, lingerMs, delayMs, serverSide, injector, 0);
    }

    @Override
    public String toString() {
      return name;
    }
  }

  private static final Injector NOTHING = (fleet, leader, term, db) -> {};

  /**
   * Terminates the leader's backend, waiting up to 5 s for it to exit. Struck inside {@code
   * close()}, the close may have ended the session before the parent's statement arrives (the
   * release is one round trip): then there is nothing left to terminate, and the round is a
   * graceful close. A backend that is still there and was not terminated fails the round.
   */
  private static void terminate(TestDatabase db, int pid) throws SQLException {
    if (!db.terminateBackend(pid)) {
      assertThat(db.queryInts("SELECT count(*)::int FROM pg_stat_activity WHERE pid = ?", pid))
          .as("backend %d was neither terminated within 5 s nor gone", pid)
          .containsExactly(0);
    }
  }

  static final Fault KILL_9 =
      new Fault("kill-9", ANY, Action.NONE, LINGER_MS, 0, true, (f, m, t, d) -> f.kill9(m));
  static final Fault TERMINATE =
      new Fault(
          "pg_terminate_backend",
          ANY,
          Action.NONE,
          LINGER_MS,
          0,
          true,
          (f, m, t, d) -> terminate(d, m.backendPid(t)));
  static final Fault PARTITION =
      new Fault(
          "partition", ANY, Action.NONE, LINGER_MS, 0, true, (f, m, t, d) -> m.proxy.blackhole());
  static final Fault PAUSE_LEADER =
      new Fault("pause", ANY, Action.NONE, LINGER_MS, 0, true, (f, m, t, d) -> f.pause(m, PAUSE));
  static final Fault TASK_THROWS =
      new Fault("task-throws", MID_TASK, Action.THROW, LINGER_MS, 0, false, NOTHING);
  static final Fault TASK_HANGS =
      new Fault("task-hangs", MID_TASK, Action.HANG, LINGER_MS, 0, false, NOTHING);
  static final Fault GRACEFUL_CLOSE =
      new Fault(
          "graceful-close",
          MID_TASK,
          Action.NONE,
          LINGER_MS,
          0,
          false,
          (f, m, t, d) -> f.sigterm(m));
  static final Fault UNLOCK_ALL =
      new Fault("pg_advisory_unlock_all", MID_TASK, Action.UNLOCK_ALL, LINGER_MS, 0, true, NOTHING);
  static final Fault IDLE_IN_TRANSACTION =
      new Fault(
          "idle_in_transaction_session_timeout",
          EnumSet.of(Phase.TX),
          Action.IDLE,
          IDLE_MS,
          IDLE_IN_TX_TIMEOUT_MS,
          true,
          NOTHING);

  /**
   * The bound on a check after user SQL released the key through a function, whose text says
   * nothing: one heartbeat (the ownership proof is due then however busy the task keeps the
   * session), plus the moment the candidate takes to stamp the check.
   */
  static final long FUNCTION_ALLOWANCE_NANOS = TestLoops.HEARTBEAT.plusMillis(100).toNanos();

  /** User SQL that releases the key where the text the client sends at that moment hides it. */
  static Fault hiddenUnlock(Action action) {
    return new Fault(
        "user-sql-" + action.name().toLowerCase(Locale.ROOT),
        MID_TASK,
        action,
        LINGER_MS,
        0,
        true,
        NOTHING,
        action == Action.UNLOCK_FUNCTION ? FUNCTION_ALLOWANCE_NANOS : 0);
  }

  static Fault restart(ShutdownMode mode) {
    return new Fault(
        "restart-" + mode.name().toLowerCase(Locale.ROOT),
        ANY,
        Action.NONE,
        LINGER_MS,
        0,
        true,
        (f, m, t, d) -> d.server().restart(mode));
  }

  /** Who the candidates are and what their tasks do. */
  record Setup(int candidates, String taskMode, String user, String password) {
    static Setup two(TestDatabase db) {
      return new Setup(2, "PLAIN", db.user(), db.password());
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Scenarios

  @ParameterizedTest
  @EnumSource(TakeoverMode.class)
  void killMinus9OfTheLeaderProcess(TakeoverMode mode, TestDatabase db) throws Exception {
    scenario(db, KILL_9.name(), List.of(KILL_9), mode, ROUNDS, Setup.two(db));
  }

  @ParameterizedTest
  @EnumSource(TakeoverMode.class)
  void pgTerminateBackendOfTheLeaderSession(TakeoverMode mode, TestDatabase db) throws Exception {
    scenario(db, TERMINATE.name(), List.of(TERMINATE), mode, ROUNDS, Setup.two(db));
  }

  /** Each shutdown mode, in one takeover mode each by default (see {@link FaultModes}). */
  static Stream<Arguments> restarts() {
    return FaultModes.alternating(
        Stream.of(ShutdownMode.values()).map(s -> new Object[] {s}).toList());
  }

  @ParameterizedTest
  @MethodSource("restarts")
  void postgresRestartWhileLeading(ShutdownMode shutdown, TakeoverMode mode, TestDatabase db)
      throws Exception {
    Assumptions.assumeTrue(db.server().supportsRestart(), "needs a server the tests can restart");
    Fault restart = restart(shutdown);
    scenario(db, restart.name(), List.of(restart), mode, ROUNDS, Setup.two(db));
  }

  @ParameterizedTest
  @MethodSource("dev.retsu.lock.faults.FaultModes#pollByDefault")
  void partitionLongerThanTheServerBound(TakeoverMode mode, TestDatabase db) throws Exception {
    scenario(db, PARTITION.name(), List.of(PARTITION), mode, ROUNDS, Setup.two(db));
  }

  @ParameterizedTest
  @MethodSource("dev.retsu.lock.faults.FaultModes#waitByDefault")
  void leaderPausedLongerThanTheServerBoundFencesOnResume(TakeoverMode mode, TestDatabase db)
      throws Exception {
    scenario(db, PAUSE_LEADER.name(), List.of(PAUSE_LEADER), mode, ROUNDS, Setup.two(db));
  }

  @ParameterizedTest
  @EnumSource(TakeoverMode.class)
  void taskThatThrows(TakeoverMode mode, TestDatabase db) throws Exception {
    scenario(db, TASK_THROWS.name(), List.of(TASK_THROWS), mode, ROUNDS, Setup.two(db));
  }

  @ParameterizedTest
  @EnumSource(TakeoverMode.class)
  void taskThatHangsPastItsTimeout(TakeoverMode mode, TestDatabase db) throws Exception {
    scenario(db, TASK_HANGS.name(), List.of(TASK_HANGS), mode, ROUNDS, Setup.two(db));
  }

  /** SIGTERM while the task runs: the shutdown hook's close() must not free the lock under it. */
  @ParameterizedTest
  @EnumSource(TakeoverMode.class)
  void gracefulCloseWhileTheTaskRuns(TakeoverMode mode, TestDatabase db) throws Exception {
    scenario(db, GRACEFUL_CLOSE.name(), List.of(GRACEFUL_CLOSE), mode, ROUNDS, Setup.two(db));
  }

  /** User code frees every advisory lock of the lease's session while the task runs. */
  @ParameterizedTest
  @EnumSource(TakeoverMode.class)
  void userCodeCallsAdvisoryUnlockAllMidTask(TakeoverMode mode, TestDatabase db) throws Exception {
    scenario(db, UNLOCK_ALL.name(), List.of(UNLOCK_ALL), mode, ROUNDS, Setup.two(db));
  }

  /** Each hidden unlock, in one takeover mode each by default (see {@link FaultModes}). */
  static Stream<Arguments> hiddenUnlocks() {
    return FaultModes.alternating(
        Stream.of(Action.UNLOCK_FUNCTION, Action.UNLOCK_PREPARED, Action.UNLOCK_ESCAPED)
            .map(a -> new Object[] {a})
            .toList());
  }

  /**
   * User SQL on the leader's session releases the key where the text the client sends hides it (a
   * function whose body unlocks, a statement prepared and checked before it runs, an escaped name),
   * and the task then keeps issuing statements and checks for the whole phase. The prepared and
   * escaped forms fail the very next check (no stale check at all); the function is found by the
   * ownership proof within one heartbeat, the allowance the checker grants it and no more.
   */
  @ParameterizedTest
  @MethodSource("hiddenUnlocks")
  void userSqlReleasesTheKeyWhileTheTaskKeepsWorking(
      Action action, TakeoverMode mode, TestDatabase db) throws Exception {
    db.execute(TimedTask.FUNCTIONS);
    Fault fault = hiddenUnlock(action);
    scenario(db, fault.name(), List.of(fault), mode, ROUNDS, Setup.two(db));
  }

  /**
   * {@code RESET ALL} on the leader's session, as text or through a function, while the task keeps
   * working: the key is still held, so the term goes on (the next ownership proof applies the
   * server-side bounds again) and no other candidate acquires.
   */
  @ParameterizedTest
  @MethodSource("resets")
  void resetAllOnTheLeadersSessionKeepsTheTerm(Action action, TakeoverMode mode, TestDatabase db)
      throws Exception {
    db.execute(TimedTask.FUNCTIONS);
    keptTerm(
        db,
        "user-sql-"
            + action.name().toLowerCase(Locale.ROOT)
            + "."
            + mode.name().toLowerCase(Locale.ROOT),
        mode,
        db.user(),
        db.password(),
        FaultTiming.REFRESH_TIMEOUT,
        MID_TASK,
        action,
        LINGER_MS,
        (leader, phaseAt) -> phaseAt + TimeUnit.MILLISECONDS.toNanos(LINGER_MS));
  }

  static Stream<Arguments> resets() {
    return Stream.of(Action.RESET_ALL, Action.RESET_FUNCTION)
        .flatMap(a -> Stream.of(TakeoverMode.values()).map(t -> Arguments.of(a, t)));
  }

  /**
   * The candidates' role carries {@code idle_in_transaction_session_timeout = '500ms'} (ALTER ROLE
   * ... SET, as a DBA would configure it), and the task idles 900 ms in a transaction. Before the
   * fix the server ended the leader's session mid-task while the task kept passing its checks; now
   * the lease pins the timeout on its session, so the leader rides it out: same term, no other
   * candidate acquires, and the checker still finds no acting overlap. (The refresh timeout is
   * raised for this scenario so that the idle task itself is not cut off.)
   */
  @ParameterizedTest
  @EnumSource(TakeoverMode.class)
  void roleLevelIdleInTransactionTimeoutCannotEndTheLeadersSession(
      TakeoverMode mode, TestDatabase db) throws Exception {
    String role = "retsu_idle_tx_" + mode.name().toLowerCase(Locale.ROOT);
    String password = "pw" + Long.toHexString(new Random().nextLong() & Long.MAX_VALUE);
    db.execute(
        "DROP ROLE IF EXISTS "
            + role
            + "; CREATE ROLE "
            + role
            + " LOGIN NOSUPERUSER PASSWORD '"
            + password
            + "'; ALTER ROLE "
            + role
            + " SET idle_in_transaction_session_timeout = '"
            + IDLE_IN_TX_TIMEOUT_MS
            + "ms'");
    try {
      keptTerm(
          db,
          IDLE_IN_TRANSACTION.name() + "." + mode.name().toLowerCase(Locale.ROOT),
          mode,
          role,
          password,
          Duration.ofSeconds(3),
          EnumSet.of(Phase.TX),
          Action.IDLE,
          IDLE_MS,
          (leader, phaseAt) -> phaseAt + TimeUnit.MILLISECONDS.toNanos(IDLE_MS));
    } finally {
      dropRole(db, role);
    }
  }

  @ParameterizedTest
  @EnumSource(TakeoverMode.class)
  void partitionHealedBeforeTheDeadlineKeepsTheTerm(TakeoverMode mode, TestDatabase db)
      throws Exception {
    keptTerm(
        db,
        "partition-healed." + mode.name().toLowerCase(Locale.ROOT),
        mode,
        db.user(),
        db.password(),
        // A check during the partition waits for the heartbeat in flight (its answer is evidence),
        // which TCP retransmits after the heal: a refresh spanning the partition takes longer than
        // the suite's 1 s refresh timeout, legitimately.
        Duration.ofSeconds(3),
        LEADING,
        Action.NONE,
        LINGER_MS,
        (leader, phaseAt) -> {
          // a 300 ms partition, well inside the 2 s deadline
          leader.proxy.blackhole();
          CompletableFuture.runAsync(
                  leader.proxy::heal, CompletableFuture.delayedExecutor(300, TimeUnit.MILLISECONDS))
              .get(WITHIN.toMillis(), TimeUnit.MILLISECONDS);
          return System.nanoTime();
        });
  }

  /**
   * A fault the leader must ride out: it strikes at the armed phase and returns when it is over;
   * the leader then passes a check in the same term, and no other candidate acquires meanwhile.
   */
  interface KeptFault {
    long strike(Fleet.Member leader, long phaseAt) throws Exception;
  }

  private void keptTerm(
      TestDatabase db,
      String scenario,
      TakeoverMode mode,
      String user,
      String password,
      Duration refreshTimeout,
      Set<Phase> phases,
      Action action,
      long lingerMs,
      KeptFault fault)
      throws Exception {
    long seed = seedFor(scenario);
    Random random = new Random(seed);
    long key = TestKeys.nextValue();
    List<TermChecker.Injection> injections = new ArrayList<>();
    Fleet.TaskProfile task =
        Fleet.TaskProfile.of(random.nextLong(), "PLAIN").withRefreshTimeout(refreshTimeout);
    try (Fleet fleet = new Fleet(db, key, mode, task, user, password)) {
      fleet.launch(2);
      for (int round = 1; round <= ROUNDS; round++) {
        Phase phase = pick(random, phases);
        Fleet.Member leader = fleet.awaitLeaderAndContendingStandbys(WITHIN);
        TermChecker.Event at = arm(fleet, leader, phase, action, lingerMs);
        String term = at.fields().get(1);
        long start = System.nanoTime();
        long over = fault.strike(leader, at.nanos());
        injections.add(
            new TermChecker.Injection(round, leader.id, term, start, true, scenario + "@" + phase));
        await()
            .atMost(WITHIN)
            .until(
                () ->
                    leader.events.stream()
                        .anyMatch(
                            e ->
                                e.kind().equals("CHECK")
                                    && e.fields().get(0).equals(term)
                                    && e.nanos() > over));
        assertThat(leader.openTerm().orElseThrow().fields().get(0)).isEqualTo(term);
        assertThat(fleet.timeline())
            .noneMatch(e -> e.kind().equals("ACQUIRED") && e.nanos() > start);
      }
      fleet.stopAll();
      // The term is kept on purpose here, so its checks after the fault are no finding.
      judge(
          scenario,
          TermChecker.analyse(fleet.timeline(), Set.of(), injections),
          injections,
          false,
          fleet.exits());
    }
  }

  @ParameterizedTest
  @EnumSource(TakeoverMode.class)
  void randomFaultsAtRandomPhasesAmongThreeCandidates(TakeoverMode mode, TestDatabase db)
      throws Exception {
    List<Fault> faults =
        List.of(
            KILL_9,
            TERMINATE,
            restart(ShutdownMode.FAST),
            restart(ShutdownMode.IMMEDIATE),
            PARTITION,
            PAUSE_LEADER,
            TASK_THROWS,
            TASK_HANGS,
            GRACEFUL_CLOSE,
            UNLOCK_ALL,
            hiddenUnlock(Action.UNLOCK_FUNCTION),
            hiddenUnlock(Action.UNLOCK_PREPARED),
            hiddenUnlock(Action.UNLOCK_ESCAPED));
    db.execute(TimedTask.FUNCTIONS);
    scenario(
        db, "random", faults, mode, RANDOM_ROUNDS, new Setup(3, "MIXED", db.user(), db.password()));
  }

  // ---------------------------------------------------------------------------------------------
  // The round

  private void scenario(
      TestDatabase db, String name, List<Fault> faults, TakeoverMode mode, int rounds, Setup setup)
      throws Exception {
    scenario(db, db.jdbcUrl(), name, faults, mode, rounds, setup);
  }

  /**
   * One scenario: {@code rounds} faults drawn from {@code faults}, each judged by {@link
   * TermChecker}, with candidates that reach the database through {@code upstreamUrl} (the server,
   * or a pooler or proxy in front of it), each behind its own fault proxy.
   */
  static void scenario(
      TestDatabase db,
      String upstreamUrl,
      String name,
      List<Fault> faults,
      TakeoverMode mode,
      int rounds,
      Setup setup)
      throws Exception {
    String scenario = name + "." + mode.name().toLowerCase(Locale.ROOT);
    long seed = seedFor(scenario);
    Random random = new Random(seed);
    long key = TestKeys.nextValue();
    Set<String> killed = new HashSet<>();
    List<TermChecker.Injection> injections = new ArrayList<>();
    try (Fleet fleet =
        new Fleet(
            db,
            upstreamUrl,
            key,
            mode,
            Fleet.TaskProfile.of(random.nextLong(), setup.taskMode()),
            setup.user(),
            setup.password())) {
      fleet.launch(setup.candidates());
      for (int round = 1; round <= rounds; round++) {
        Fault fault = faults.get(random.nextInt(faults.size()));
        if (fault.name().startsWith("restart") && !db.server().supportsRestart()) {
          fault = TERMINATE;
        }
        Phase phase = pick(random, fault.phases());
        Fleet.Member leader = fleet.awaitLeaderAndContendingStandbys(WITHIN);
        TermChecker.Event at = arm(fleet, leader, phase, fault.action(), fault.lingerMs());
        String term = at.fields().get(1);
        // A fault the candidate does itself struck at its PHASE line (plus the fault's delay);
        // the parent injects its own now, except inside close(): there the library releases the
        // lock when the listener's phase ends, so a parent that sees PHASE late (a busy machine, a
        // poll interval) may strike after the successor's term began. That term is the takeover,
        // so the fault counts from the phase.
        long injected =
            fault.action() != Action.NONE
                ? at.nanos() + TimeUnit.MILLISECONDS.toNanos(fault.delayMs())
                : phase == Phase.CLOSE ? at.nanos() : System.nanoTime();
        fault.injector().inject(fleet, leader, term, db);
        String label = fault.name() + "@" + phase;
        injections.add(
            new TermChecker.Injection(
                round,
                leader.id,
                term,
                injected,
                fault.serverSide(),
                label,
                fault.allowanceNanos()));
        long check = fleet.awaitNewTermCheck(injected, WITHIN);
        record(scenario, round, (check - injected) / 1e6, label);
        fleet.awaitTermEnded(leader, term, WITHIN);
        if (leader.killed) {
          killed.add(leader.id);
        }
        fleet.settle(leader, WITHIN);
      }
      fleet.stopAll();
      fleet.members().stream().filter(m -> m.killed).forEach(m -> killed.add(m.id));
      TermChecker.Result result = TermChecker.analyse(fleet.timeline(), killed, injections);
      judge(scenario, result, injections, true, fleet.exits());
      assertThat(result.terms()).hasSizeGreaterThanOrEqualTo(rounds + 1);
    }
  }

  /**
   * Arms a phase of the leader and returns its PHASE line once it is there. For {@link Phase#CLOSE}
   * the leader is stopped gracefully (SIGTERM), so the phase is inside close().
   */
  static TermChecker.Event arm(
      Fleet fleet, Fleet.Member leader, Phase phase, Action action, long lingerMs) {
    long armed = System.nanoTime();
    leader.send("ARM " + phase + " " + action + " " + lingerMs);
    fleet.awaitEvent(leader, "ARMED", armed, WITHIN);
    if (phase == Phase.CLOSE) {
      fleet.sigterm(leader);
    }
    return fleet.awaitEvent(leader, "PHASE", armed, WITHIN);
  }

  /** Records the figures of a scenario, then fails with every violation and the seed. */
  static void judge(
      String scenario,
      TermChecker.Result result,
      List<TermChecker.Injection> injections,
      boolean faultEndsTheTerm,
      List<TermChecker.Event> exits)
      throws IOException {
    record(scenario + ".residual-window", 0, result.residualNanos() / 1e6, "");
    if (result.smallestGapNanos() != Long.MAX_VALUE) {
      record(scenario + ".smallest-gap", 0, result.smallestGapNanos() / 1e6, "");
    }
    long checkAfterFault = 0;
    for (TermChecker.Aftermath a : result.aftermath()) {
      String label = a.injection().label();
      int round = a.injection().round();
      if (faultEndsTheTerm) {
        record(scenario + ".check-after-fault", round, a.checkAfterFaultNanos() / 1e6, label);
        checkAfterFault = Math.max(checkAfterFault, a.checkAfterFaultNanos());
      }
      record(scenario + ".residual", round, a.residualNanos() / 1e6, label);
    }
    String faults =
        injections.stream()
            .map(i -> "round " + i.round() + " " + i.label() + " on " + i.termId())
            .collect(Collectors.joining(", "));
    System.out.printf(
        Locale.ROOT,
        "FAULT-SUITE %s seed=%d faults=[%s] residual-window=%.1fms check-after-fault=%.1fms"
            + " violations=%d candidates-that-gave-up=[%s]%n",
        scenario,
        SEED,
        faults,
        result.residualNanos() / 1e6,
        checkAfterFault / 1e6,
        result.violations().size(),
        // not a safety finding (the fleet replaced them); a liveness note for the closing report
        exits.stream()
            .map(e -> e.member() + " EXIT " + String.join(" ", e.fields()))
            .collect(Collectors.joining(", ")));
    if (!result.violations().isEmpty()) {
      String message =
          String.format(
              Locale.ROOT,
              "%s: %d violation(s) of \"at most one acting leader\" (seed %d; rerun with"
                  + " -Dretsu.faults.seed=%d); faults: %s%n  %s",
              scenario,
              result.violations().size(),
              SEED,
              SEED,
              faults,
              String.join("\n  ", result.violations()));
      System.out.println("FAULT-SUITE-FAILURE " + message);
      throw new AssertionError(message);
    }
  }

  /**
   * Each scenario draws from its own stream, so adding or reordering scenarios changes no other.
   */
  static long seedFor(String scenario) {
    return SEED * 1_000_003L + scenario.hashCode();
  }

  static Phase pick(Random random, Set<Phase> phases) {
    List<Phase> list = new ArrayList<>(phases);
    return list.get(random.nextInt(list.size()));
  }

  private static void dropRole(TestDatabase db, String role) {
    try {
      db.execute("DROP ROLE IF EXISTS " + role);
    } catch (SQLException e) {
      // a session of the role may linger a moment after its candidate exited
      await()
          .atMost(WITHIN)
          .ignoreExceptions()
          .until(
              () -> {
                db.execute("DROP ROLE IF EXISTS " + role);
                return true;
              });
    }
  }

  /** Summarises every measurement of this run as a Markdown table in target/fault-summary.md. */
  @AfterAll
  static void summarize() throws IOException {
    Path in = Path.of("target", "fault-results.tsv");
    if (!Files.exists(in)) {
      return;
    }
    java.util.Map<String, List<Double>> byScenario = new java.util.TreeMap<>();
    for (String line : Files.readAllLines(in)) {
      String[] f = line.split("\t");
      byScenario
          .computeIfAbsent(f[0], k -> new java.util.ArrayList<>())
          .add(Double.parseDouble(f[2]));
    }
    StringBuilder md =
        new StringBuilder(
            "| scenario | n | min ms | median ms | max ms |\n|---|---|---|---|---|\n");
    byScenario.forEach(
        (name, values) -> {
          java.util.Collections.sort(values);
          md.append(
              String.format(
                  java.util.Locale.ROOT,
                  "| %s | %d | %.0f | %.0f | %.0f |%n",
                  name,
                  values.size(),
                  values.get(0),
                  values.get(values.size() / 2),
                  values.get(values.size() - 1)));
        });
    Files.writeString(Path.of("target", "fault-summary.md"), md.toString());
  }

  static void record(String scenario, int round, double millis, String label) throws IOException {
    Path out = Path.of("target", "fault-results.tsv");
    Files.writeString(
        out,
        String.format(Locale.ROOT, "%s\t%d\t%.1f\t%s%n", scenario, round, millis, label),
        StandardOpenOption.CREATE,
        StandardOpenOption.APPEND);
  }
}
