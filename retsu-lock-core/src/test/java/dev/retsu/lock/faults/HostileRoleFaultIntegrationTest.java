package dev.retsu.lock.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.LeaderInfo;
import dev.retsu.lock.LeaderWatch;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.TakeoverMode;
import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.faults.FaultCandidate.Action;
import dev.retsu.lock.faults.FaultCandidate.Phase;
import dev.retsu.lock.internal.session.Notices;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TermChecker;
import dev.retsu.lock.testing.TestDatabase;
import dev.retsu.lock.testing.WhoLeadsChecker;
import dev.retsu.lock.testing.WhoLeadsChecker.Answer;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The fault suite's hostile-role family: a role {@code mallory} with LOGIN and nothing else (the
 * database's default {@code CONNECT} for PUBLIC) strikes while candidates ({@link FaultCandidate}
 * JVMs) lead and hand over, at a phase of the leader's task drawn from a seeded {@link Random}
 * (before its check, after it, in a transaction, between refreshes), with one forgery per round in
 * a seeded order, so that every forgery strikes at least once per scenario:
 *
 * <ul>
 *   <li>{@code acquired} and {@code released} notices on {@value Notices#CHANNEL} with the leader's
 *       pid and token (other sessions' facts, readable by anyone), and with mallory's own pid (a
 *       {@code released}, and an {@code acquired} with the top token from a session named like a
 *       term with that token);
 *   <li>a session named like the leader's term ({@code retsu-lock:<candidate>#<token>}), idle or
 *       queued on the key with {@code pg_advisory_lock}, and one named like a preferred standby
 *       ({@code retsu-lock-preferred:x}) queued on the key: when the server grants mallory the key,
 *       mallory holds it a moment (the denial of service inherent to advisory locks), then lets go.
 * </ul>
 *
 * Then the leader's term ends (a graceful close, or its session terminated; with the lock-delay:
 * its link partitioned and its session terminated, which only the delay covers). Verdicts: {@link
 * TermChecker} finds no acting overlap (a WAIT standby with {@code takeoverDelay()} acts no sooner
 * than the delay after a non-graceful end, whatever mallory sent); {@link WhoLeadsChecker} finds
 * that every "who leads" answer sampled during the run ({@link LeaderWatch#leader}, the watch's
 * changes, {@link LeaderInfo#of(DataSource, LockKey)}) named a real live term of a candidate, never
 * mallory, and showed a key mallory held as foreign or empty; no term ends {@code YIELDED} (no
 * candidate is preferred, so no leader has anyone to yield to).
 *
 * <p>Rounds: every forgery once by default, {@code retsu.faults.rounds} (16 under {@code
 * -Pfaults-full}) when more; the seed is {@code retsu.faults.seed}, printed with every verdict.
 */
@ExtendWith(PostgresExtension.class)
class HostileRoleFaultIntegrationTest {

  private static final Duration WITHIN = FaultInjectionIntegrationTest.WITHIN;

  /** How far a one-query read may trail the candidates' own events (the read and the print). */
  static final long INFO_LAG = TimeUnit.MILLISECONDS.toNanos(300);

  /** How far a watch may trail: its {@code checkInterval} plus a round trip and the print. */
  static final long WATCH_LAG = LeaderWatch.DEFAULT_CHECK_INTERVAL.plusMillis(500).toNanos();

  /** What mallory does in a round. */
  enum Forgery {
    /** {@code acquired} with the leader's pid and the top token, naming a standby. */
    ACQUIRED_OTHERS_PID,
    /** {@code acquired} from its own session, named like a term with the top token. */
    ACQUIRED_OWN_PID_TOP_TOKEN,
    /** {@code released} with the leader's pid and token. */
    RELEASED_OTHERS_PID,
    /** {@code released} from its own session with the leader's token. */
    RELEASED_OWN_PID,
    /** A session named like the leader's term, idle. */
    NAMED_LIKE_THE_TERM_IDLE,
    /** A session named like the leader's term, queued on the key. */
    NAMED_LIKE_THE_TERM_QUEUED,
    /** A session named like a preferred standby, queued on the key. */
    NAMED_PREFERRED_QUEUED
  }

  /** How the struck term ends. */
  enum End {
    GRACEFUL_CLOSE,
    TERMINATED,
    /** Its link blackholed and its session terminated: only the lock-delay covers this. */
    PARTITIONED_AND_TERMINATED
  }

  private static final Set<Phase> LEADING =
      EnumSet.of(Phase.PRE, Phase.POST, Phase.TX, Phase.BETWEEN);

  @ParameterizedTest
  @EnumSource(TakeoverMode.class)
  void hostileRoleForgesNoticesAndNamesWhileCandidatesLeadAndHandOver(
      TakeoverMode mode, TestDatabase db) throws Exception {
    family(
        db,
        "hostile-role",
        mode,
        List.of(Forgery.values()),
        List.of(End.GRACEFUL_CLOSE, End.TERMINATED),
        false);
  }

  /**
   * WAIT standbys with the lock-delay ({@code takeoverDelay()}, 2 s: their {@code selfFenceAfter});
   * each round the leader's link is blackholed and its session terminated, so the old leader keeps
   * passing checks until it self-fences, and only the delay keeps the successor from acting
   * meanwhile. Mallory forges the scenario's {@code released} at the leader's phase, and both
   * {@code released} (with the leader's pid, with its own) just before the termination.
   */
  @Test
  void hostileReleasedNoticesNeverTurnOffTheLockDelay(TestDatabase db) throws Exception {
    family(
        db,
        "hostile-lock-delay",
        TakeoverMode.WAIT,
        List.of(Forgery.RELEASED_OTHERS_PID, Forgery.RELEASED_OWN_PID),
        List.of(End.PARTITIONED_AND_TERMINATED),
        true);
  }

  private void family(
      TestDatabase db,
      String name,
      TakeoverMode mode,
      List<Forgery> forgeries,
      List<End> ends,
      boolean lockDelay)
      throws Exception {
    String scenario = name + "." + mode.name().toLowerCase(Locale.ROOT);
    long seed = FaultInjectionIntegrationTest.seedFor(scenario);
    Random random = new Random(seed);
    List<Forgery> order = new ArrayList<>(forgeries);
    Collections.shuffle(order, random);
    // every forgery once by default (the lock-delay's both released forgeries strike at every
    // termination, so one round has them all), more under -Pfaults-full
    int rounds =
        lockDelay
            ? Math.max(1, FaultInjectionIntegrationTest.ROUNDS / 4)
            : Math.max(order.size(), FaultInjectionIntegrationTest.ROUNDS);
    long key = TestKeys.nextValue();
    LockKey lockKey = LockKey.of(key);
    List<TermChecker.Injection> injections = new ArrayList<>();
    Map<String, Long> strucks = new HashMap<>();
    List<Answer> answers = new CopyOnWriteArrayList<>();
    Set<String> killed = new HashSet<>();
    List<String> struckLabels = new ArrayList<>();
    List<String> early = new ArrayList<>();
    try (Mallory mallory = new Mallory(db);
        LeaderWatch watch = LeaderWatch.open(db.dataSource());
        Fleet fleet = new Fleet(db, key, mode, Fleet.TaskProfile.of(random.nextLong(), "PLAIN"))) {
      watch.watch(
          lockKey,
          change ->
              answers.add(answer(System.nanoTime(), "watch-change", WATCH_LAG, change.leader())));
      Sampler sampler =
          new Sampler(db.dataSource(), watch, List.of(lockKey), Map.of(lockKey, answers), 50);
      if (lockDelay) {
        fleet.withLockDelay();
      }
      fleet.launch(2);
      sampler.start();
      for (int round = 1; round <= rounds; round++) {
        Forgery forgery = order.get((round - 1) % order.size());
        if (round > order.size()) {
          forgery = order.get(random.nextInt(order.size()));
        }
        Phase phase = FaultInjectionIntegrationTest.pick(random, LEADING);
        End end = ends.get(random.nextInt(ends.size()));
        long forgeryLeadMs = random.nextInt(400);
        Fleet.Member leader = fleet.awaitLeaderAndContendingStandbys(WITHIN);
        TermChecker.Event at =
            FaultInjectionIntegrationTest.arm(
                fleet, leader, phase, Action.NONE, FaultInjectionIntegrationTest.LINGER_MS);
        String term = at.fields().get(1);
        TermChecker.Event acquired =
            leader.events.stream()
                .filter(e -> e.kind().equals("ACQUIRED") && e.fields().get(0).equals(term))
                .reduce((a, b) -> b)
                .orElseThrow();
        String token = acquired.fields().get(1);
        int leaderPid = Integer.parseInt(acquired.fields().get(2));
        String standby =
            fleet.living().stream().filter(m -> m != leader).map(m -> m.id).findFirst().orElse("x");
        strike(mallory, forgery, key, leader.id, leaderPid, token, standby);
        // the forgery has a moment to mislead before the term ends (the answers are sampled)
        await().pollDelay(Duration.ofMillis(forgeryLeadMs)).atMost(WITHIN).until(() -> true);
        long injected = System.nanoTime();
        switch (end) {
          case GRACEFUL_CLOSE -> fleet.sigterm(leader);
          case TERMINATED -> terminate(db, leaderPid);
          case PARTITIONED_AND_TERMINATED -> {
            leader.proxy.blackhole();
            injected = System.nanoTime();
            try (Connection c = mallory.session("retsu-lock:" + leader.id + "#" + token)) {
              Mallory.released(c, key, leaderPid, token);
              Mallory.released(c, key, Mallory.pid(c), token);
            }
            terminate(db, leaderPid);
          }
        }
        String label = forgery + "@" + phase + "+" + end;
        struckLabels.add("round " + round + " " + label + " on " + leader.id + "#" + term);
        injections.add(
            new TermChecker.Injection(
                round, leader.id, term, injected, end != End.GRACEFUL_CLOSE, label));
        strucks.put(leader.id + "#" + term, injected);
        long check = fleet.awaitNewTermCheck(injected, WITHIN);
        FaultInjectionIntegrationTest.record(scenario, round, (check - injected) / 1e6, label);
        if (lockDelay && check - injected < dev.retsu.lock.fakes.TestLoops.SELF_FENCE.toNanos()) {
          // the successor acts no sooner than the delay (selfFenceAfter) after the fault
          early.add(
              String.format(
                  Locale.ROOT,
                  "round %d %s: the successor's first check %.1f ms after the fault, before the"
                      + " lock-delay of %d ms",
                  round,
                  label,
                  (check - injected) / 1e6,
                  dev.retsu.lock.fakes.TestLoops.SELF_FENCE.toMillis()));
        }
        fleet.awaitTermEnded(leader, term, WITHIN);
        fleet.settle(leader, WITHIN);
        mallory.settle(WITHIN);
      }
      stopStandbysFirst(db, fleet);
      fleet.stopAll();
      sampler.stop();
      fleet.members().stream().filter(m -> m.killed).forEach(m -> killed.add(m.id));
      List<TermChecker.Event> timeline = fleet.timeline();
      TermChecker.Result result = TermChecker.analyse(timeline, killed, injections);
      List<String> falseAnswers =
          WhoLeadsChecker.check(timeline, answers, mallory.pids, mallory.holds, strucks);
      List<String> yielded =
          timeline.stream()
              .filter(e -> e.kind().equals("LOST") && e.fields().get(1).equals("YIELDED"))
              .map(
                  e ->
                      e.member() + "#" + e.fields().get(0) + " YIELDED with no preferred candidate")
              .collect(Collectors.toList());
      dump(scenario, timeline, answers, mallory);
      System.out.printf(
          Locale.ROOT,
          "HOSTILE-FAULTS %s seed=%d rounds=[%s] answers=%d false-answers=%d mallory-holds=%d"
              + " yields=%d%n",
          scenario,
          FaultInjectionIntegrationTest.SEED,
          String.join(", ", struckLabels),
          answers.size(),
          falseAnswers.size(),
          mallory.holds.size(),
          yielded.size());
      assertThat(falseAnswers)
          .as(
              "%s: every \"who leads\" answer names a real term (seed %d, rerun with"
                  + " -Dretsu.faults.seed=%d); rounds: %s",
              scenario,
              FaultInjectionIntegrationTest.SEED,
              FaultInjectionIntegrationTest.SEED,
              struckLabels)
          .isEmpty();
      assertThat(yielded).as("%s: no yield to a forged preferred name", scenario).isEmpty();
      assertThat(answers).as("%s: answers were sampled", scenario).isNotEmpty();
      FaultInjectionIntegrationTest.judge(scenario, result, injections, true, fleet.exits());
      assertThat(early).as("%s: the lock-delay holds (seed %d)", scenario, seed).isEmpty();
      assertThat(result.terms()).hasSizeGreaterThanOrEqualTo(rounds + 1);
    }
  }

  /**
   * Writes the run to {@code target/hostile-faults/<scenario>.txt}: every event of the candidates
   * and every answer by time, mallory's pids and holds, so that a false answer can be read in its
   * context.
   */
  private static void dump(
      String scenario, List<TermChecker.Event> timeline, List<Answer> answers, Mallory mallory)
      throws java.io.IOException {
    List<String> lines = new ArrayList<>();
    for (TermChecker.Event e : timeline) {
      lines.add(
          String.format(
              Locale.ROOT, "%.1f %s %s %s", e.nanos() / 1e6, e.member(), e.kind(), e.fields()));
    }
    for (Answer a : answers) {
      lines.add(String.format(Locale.ROOT, "%.1f ANSWER %s", a.nanos() / 1e6, a));
    }
    lines.sort(java.util.Comparator.comparingDouble(l -> Double.parseDouble(l.split(" ")[0])));
    lines.add("mallory pids " + mallory.pids);
    for (var h : mallory.holds) {
      lines.add(
          String.format(
              Locale.ROOT,
              "mallory pid %d held %.1f to %.1f",
              h.pid(),
              h.from() / 1e6,
              h.to() / 1e6));
    }
    java.nio.file.Path dir = java.nio.file.Path.of("target", "hostile-faults");
    java.nio.file.Files.createDirectories(dir);
    java.nio.file.Files.write(dir.resolve(scenario + ".txt"), lines);
  }

  /**
   * Stops the standbys and waits until their sessions are gone before the leader stops: a stopped
   * WAIT standby's backend stays queued until the server notices its client left ({@code
   * client_connection_check_interval}), and is granted the key (with a token) if the leader lets go
   * meanwhile (seen once in this family's teardown: a stopped standby's backend granted the key
   * with a new token 330 ms after its process printed STOPPED). The family judges the hostile role,
   * not the teardown.
   */
  private static void stopStandbysFirst(TestDatabase db, Fleet fleet) {
    for (Fleet.Member m : fleet.living()) {
      if (m.openTerm().isEmpty()) {
        fleet.sigterm(m);
      }
    }
    for (Fleet.Member m : fleet.members()) {
      if (m.stopping) {
        await().atMost(WITHIN).until(() -> !m.alive());
        await()
            .atMost(WITHIN)
            .until(
                () ->
                    db.queryInts(
                                "SELECT count(*)::int FROM pg_catalog.pg_stat_activity"
                                    + " WHERE application_name LIKE ?",
                                "retsu-lock%:" + m.id + "%")
                            .get(0)
                        == 0);
      }
    }
  }

  /** Mallory's forgery of a round against the leader's term. */
  static void strike(
      Mallory mallory,
      Forgery forgery,
      long key,
      String leader,
      int leaderPid,
      String token,
      String standby)
      throws Exception {
    Duration patience = Duration.ofSeconds(3);
    Duration hold = Duration.ofMillis(300);
    switch (forgery) {
      case ACQUIRED_OTHERS_PID -> {
        Connection c = mallory.session("psql");
        Mallory.acquired(c, key, leaderPid, Mallory.TOP, standby);
      }
      case ACQUIRED_OWN_PID_TOP_TOKEN -> {
        Connection c = mallory.session("retsu-lock:" + leader + "#" + Mallory.TOP);
        Mallory.acquired(c, key, Mallory.pid(c), Mallory.TOP, leader);
        Mallory.acquired(c, key, Mallory.pid(c), Mallory.TOP, "mallory");
      }
      case RELEASED_OTHERS_PID -> {
        Connection c = mallory.session("psql");
        Mallory.released(c, key, leaderPid, token);
      }
      case RELEASED_OWN_PID -> {
        Connection c = mallory.session("retsu-lock:" + leader + "#" + token);
        Mallory.released(c, key, Mallory.pid(c), token);
      }
      case NAMED_LIKE_THE_TERM_IDLE -> mallory.session("retsu-lock:" + leader + "#" + token);
      case NAMED_LIKE_THE_TERM_QUEUED ->
          mallory.queue("retsu-lock:" + leader + "#" + token, key, patience, hold);
      case NAMED_PREFERRED_QUEUED -> mallory.queue("retsu-lock-preferred:x", key, patience, hold);
    }
  }

  private static void terminate(TestDatabase db, int pid) throws Exception {
    if (!db.terminateBackend(pid)) {
      assertThat(db.queryInts("SELECT count(*)::int FROM pg_stat_activity WHERE pid = ?", pid))
          .as("backend %d was neither terminated within 5 s nor gone", pid)
          .containsExactly(0);
    }
  }

  static Answer answer(long nanos, String source, long lag, Optional<LeaderInfo> leader) {
    if (leader.isEmpty()) {
      return Answer.nobody(nanos, source, lag);
    }
    LeaderInfo i = leader.get();
    return new Answer(
        nanos,
        source,
        lag,
        i.foreign() ? null : i.candidateId(),
        i.pid(),
        i.token().map(Object::toString).orElse(null),
        i.foreign());
  }

  /**
   * Samples "who leads" every {@code everyMs} for each key: the watch's view and one query for all
   * keys ({@link LeaderInfo#of(DataSource, java.util.Collection)}).
   */
  static final class Sampler {
    private final DataSource ds;
    private final LeaderWatch watch;
    private final List<LockKey> keys;
    private final Map<LockKey, List<Answer>> answers;
    private final long everyMs;
    private final Thread thread;
    private volatile boolean stop;

    Sampler(
        DataSource ds,
        LeaderWatch watch,
        List<LockKey> keys,
        Map<LockKey, List<Answer>> answers,
        long everyMs) {
      this.ds = ds;
      this.watch = watch;
      this.keys = List.copyOf(keys);
      this.answers = answers;
      this.everyMs = everyMs;
      this.thread = new Thread(this::run, "retsu-lock-test-who-leads-sampler");
      thread.setDaemon(true);
    }

    void start() {
      thread.start();
    }

    private void run() {
      while (!stop) {
        long now = System.nanoTime();
        for (LockKey k : keys) {
          answers.get(k).add(answer(now, "watch", WATCH_LAG, watch.leader(k)));
        }
        long before = System.nanoTime();
        try {
          Map<LockKey, LeaderInfo> read = LeaderInfo.of(ds, keys);
          long after = System.nanoTime();
          for (LockKey k : keys) {
            answers
                .get(k)
                .add(
                    answer(
                        before + (after - before) / 2,
                        "info",
                        INFO_LAG + (after - before),
                        Optional.ofNullable(read.get(k))));
          }
        } catch (RuntimeException e) {
          // a read that failed answered nothing
        }
        // a sampling cadence, not a wait for a condition
        await().pollDelay(Duration.ofMillis(everyMs)).atMost(WITHIN).until(() -> true);
      }
    }

    void stop() throws InterruptedException {
      stop = true;
      thread.join(10_000);
    }
  }
}
