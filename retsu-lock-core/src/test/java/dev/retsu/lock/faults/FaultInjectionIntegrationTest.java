package dev.retsu.lock.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.TakeoverMode;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.PostgresServer.ShutdownMode;
import dev.retsu.lock.testing.TestDatabase;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Scenarios 1 to 6 and 9 of the fault suite: candidates are separate JVMs behind fault proxies,
 * every term is recorded on one time base, and {@link TermChecker} proves that terms never overlap,
 * tokens increase, and every term ends with a reason. Each scenario runs {@code
 * retsu.faults.rounds} times (1 by default, 20 under {@code -Pfaults-full}); measured takeover
 * times go to {@code target/fault-results.tsv}.
 */
@ExtendWith(PostgresExtension.class)
class FaultInjectionIntegrationTest {

  private static final Duration WITHIN = Duration.ofSeconds(60);
  private static final AtomicInteger KEYS = new AtomicInteger(20000);
  private static final int ROUNDS = Integer.getInteger("retsu.faults.rounds", 1);
  private static final int RANDOM_ROUNDS = Integer.getInteger("retsu.faults.randomRounds", 6);
  private static final long SEED = Long.getLong("retsu.faults.seed", 20261130L);

  interface Fault {
    /** Injects the fault on the leader; returns when it is injected. */
    void inject(Fleet fleet, Fleet.Member leader, TestDatabase db) throws Exception;
  }

  private void scenario(TestDatabase db, String name, Fault fault, TakeoverMode mode, int rounds)
      throws Exception {
    long key = KEYS.incrementAndGet();
    Set<String> killed = new HashSet<>();
    try (Fleet fleet = new Fleet(db, key, mode)) {
      fleet.launch();
      fleet.launch();
      for (int round = 1; round <= rounds; round++) {
        Fleet.Member leader = fleet.awaitLeaderAndContendingStandbys(WITHIN);
        long injected = System.nanoTime();
        fault.inject(fleet, leader, db);
        long work = fleet.awaitNewTermWork(injected, WITHIN);
        record(name, round, (work - injected) / 1e6);
        if (leader.killed) {
          killed.add(leader.id);
          fleet.launch(); // the deployment restarts the dead replica
        }
        leader.proxy.heal();
      }
      fleet.stopAll();
      killed.addAll(
          fleet.members().stream()
              .filter(m -> m.killed)
              .map(m -> m.id)
              .collect(Collectors.toSet()));
      TermChecker.Result result = TermChecker.check(fleet.timeline(), killed);
      assertThat(result.terms()).hasSizeGreaterThanOrEqualTo(rounds + 1);
      record(name + ".smallest-gap", 0, result.smallestGapNanos() / 1e6);
    }
  }

  @Test
  void killMinus9OfTheLeaderProcess(TestDatabase db) throws Exception {
    scenario(db, "kill-9", (fleet, leader, d) -> fleet.kill9(leader), TakeoverMode.POLL, ROUNDS);
  }

  @Test
  void killMinus9OfTheLeaderProcessWithWaitingStandbys(TestDatabase db) throws Exception {
    scenario(
        db, "kill-9-wait", (fleet, leader, d) -> fleet.kill9(leader), TakeoverMode.WAIT, ROUNDS);
  }

  @Test
  void pgTerminateBackendOfTheLeaderSession(TestDatabase db) throws Exception {
    scenario(
        db,
        "pg_terminate_backend",
        (fleet, leader, d) -> assertThat(d.terminateBackend(leader.backendPid())).isTrue(),
        TakeoverMode.POLL,
        ROUNDS);
  }

  @ParameterizedTest
  @EnumSource(ShutdownMode.class)
  void postgresRestartWhileLeading(ShutdownMode mode, TestDatabase db) throws Exception {
    Assumptions.assumeTrue(db.server().supportsRestart(), "needs a server the tests can restart");
    scenario(
        db,
        "restart-" + mode.name().toLowerCase(java.util.Locale.ROOT),
        (fleet, leader, d) -> d.server().restart(mode),
        TakeoverMode.POLL,
        ROUNDS);
  }

  @Test
  void partitionLongerThanTheServerBound(TestDatabase db) throws Exception {
    scenario(
        db,
        "partition",
        (fleet, leader, d) -> leader.proxy.blackhole(), // healed after the takeover
        TakeoverMode.POLL,
        ROUNDS);
  }

  @Test
  void partitionHealedBeforeTheDeadlineKeepsTheTerm(TestDatabase db) throws Exception {
    long key = KEYS.incrementAndGet();
    try (Fleet fleet = new Fleet(db, key, TakeoverMode.POLL)) {
      fleet.launch();
      fleet.launch();
      for (int round = 1; round <= ROUNDS; round++) {
        Fleet.Member leader = fleet.awaitWorkingLeader(WITHIN);
        String term = leader.openTerm().orElseThrow().fields().get(0);
        long start = System.nanoTime();
        leader.proxy.blackhole();
        Thread.sleep(300); // the fault itself: a 300 ms partition, well inside the 2 s deadline
        leader.proxy.heal();
        long healed = System.nanoTime();
        await()
            .atMost(WITHIN)
            .until(
                () ->
                    leader.events.stream()
                        .anyMatch(
                            e ->
                                e.kind().equals("WORK")
                                    && e.fields().get(0).equals(term)
                                    && e.nanos() > healed));
        assertThat(leader.openTerm().orElseThrow().fields().get(0)).isEqualTo(term);
        assertThat(fleet.timeline())
            .noneMatch(e -> e.kind().equals("ACQUIRED") && e.nanos() > start);
      }
      fleet.stopAll();
      TermChecker.check(fleet.timeline(), Set.of());
    }
  }

  @Test
  void leaderPausedLongerThanTheServerBoundFencesOnResume(TestDatabase db) throws Exception {
    scenario(
        db,
        "pause",
        (fleet, leader, d) -> {
          fleet.signal(leader, "-STOP");
          leader.paused = true;
          Thread resumer =
              new Thread(
                  () -> {
                    try {
                      // the fault: a pause longer than idle_session_timeout (4 s)
                      Thread.sleep(FaultTiming.IDLE_SESSION.plusSeconds(2).toMillis());
                    } catch (InterruptedException e) {
                      Thread.currentThread().interrupt();
                    }
                    fleet.signal(leader, "-CONT");
                    leader.paused = false;
                  },
                  "retsu-lock-test-resumer");
          resumer.start();
        },
        TakeoverMode.POLL,
        ROUNDS);
  }

  @Test
  void taskThatThrows(TestDatabase db) throws Exception {
    scenario(
        db, "task-throws", (fleet, leader, d) -> leader.send("THROW"), TakeoverMode.POLL, ROUNDS);
  }

  @Test
  void taskThatHangsPastItsTimeout(TestDatabase db) throws Exception {
    scenario(
        db, "task-hangs", (fleet, leader, d) -> leader.send("HANG"), TakeoverMode.POLL, ROUNDS);
  }

  @Test
  void randomFaultsAmongThreeCandidatesNeverOverlap(TestDatabase db) throws Exception {
    System.out.println("randomFaults seed=" + SEED + " rounds=" + RANDOM_ROUNDS);
    Random random = new Random(SEED);
    List<String> kinds =
        List.of(
            "kill-9",
            "terminate",
            "restart-fast",
            "restart-immediate",
            "partition",
            "pause",
            "throw",
            "hang");
    long key = KEYS.incrementAndGet();
    Set<String> killed = new HashSet<>();
    try (Fleet fleet = new Fleet(db, key, TakeoverMode.POLL)) {
      fleet.launch();
      fleet.launch();
      fleet.launch();
      for (int round = 1; round <= RANDOM_ROUNDS; round++) {
        Fleet.Member leader = fleet.awaitLeaderAndContendingStandbys(WITHIN);
        String kind = kinds.get(random.nextInt(kinds.size()));
        if (kind.startsWith("restart") && !db.server().supportsRestart()) {
          kind = "terminate";
        }
        long injected = System.nanoTime();
        switch (kind) {
          case "kill-9" -> fleet.kill9(leader);
          case "terminate" -> db.terminateBackend(leader.backendPid());
          case "restart-fast" -> db.server().restart(ShutdownMode.FAST);
          case "restart-immediate" -> db.server().restart(ShutdownMode.IMMEDIATE);
          case "partition" -> leader.proxy.blackhole();
          case "pause" -> {
            fleet.signal(leader, "-STOP");
            leader.paused = true;
          }
          case "throw" -> leader.send("THROW");
          default -> leader.send("HANG");
        }
        long work = fleet.awaitNewTermWork(injected, WITHIN);
        record("random." + kind, round, (work - injected) / 1e6);
        if (kind.equals("pause")) {
          long resumeAt = injected + FaultTiming.IDLE_SESSION.plusSeconds(1).toNanos();
          long wait = resumeAt - System.nanoTime();
          if (wait > 0) {
            Thread.sleep(wait / 1_000_000); // keep the pause longer than the server bound
          }
          fleet.signal(leader, "-CONT");
          leader.paused = false;
        }
        leader.proxy.heal();
        if (leader.killed) {
          killed.add(leader.id);
          fleet.launch();
        }
      }
      fleet.stopAll();
      fleet.members().stream().filter(m -> m.killed).forEach(m -> killed.add(m.id));
      TermChecker.Result result = TermChecker.check(fleet.timeline(), killed);
      record("random.smallest-gap", 0, result.smallestGapNanos() / 1e6);
      assertThat(result.terms()).hasSizeGreaterThanOrEqualTo(RANDOM_ROUNDS);
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

  static void record(String scenario, int round, double millis) throws IOException {
    Path out = Path.of("target", "fault-results.tsv");
    Files.writeString(
        out,
        String.format("%s\t%d\t%.1f%n", scenario, round, millis),
        StandardOpenOption.CREATE,
        StandardOpenOption.APPEND);
  }
}
