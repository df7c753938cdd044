package dev.retsu.lock.ha;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.testing.TermChecker;
import dev.retsu.lock.testing.TermChecker.Event;
import java.nio.file.Path;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;

/**
 * What the HA test classes share: one cluster per class ({@link PatroniCluster}, started and
 * stopped here), a fleet of candidates per scenario (two through the primary endpoint, plus a
 * split-brain probe on the primary's direct address each round), the round bookkeeping, and the
 * judgement at the end of each scenario: {@link TermChecker} over every event, and the fence
 * ({@link FenceJudge}). Skips, saying why, where the packages are missing and cannot be installed.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class HaClusterTests {

  static final Path TARGET = Path.of("target");
  static final int REPS = Integer.getInteger("retsu.ha.reps", 5);

  PatroniCluster cluster;
  HaResults results;

  /** A fresh key per scenario, so no scenario meets another's terms. */
  private long nextKey = 7_000_000_000L + (System.nanoTime() % 1_000_000L) * 1000;

  /** The file name of this class's results. */
  abstract String resultsName();

  @BeforeAll
  void startCluster() throws SQLException {
    Optional<String> why = HaEnvironment.prepare();
    Assumptions.assumeTrue(why.isEmpty(), () -> "HA cluster tests skipped: " + why.orElse(""));
    cluster =
        PatroniCluster.start(HaSettings.SUITE, TARGET.resolve("ha-logs").resolve(resultsName()));
    cluster.execute(HaCandidate.Fence.SCHEMA);
    results = new HaResults(TARGET.resolve("ha-results"), resultsName(), cluster.settings());
  }

  @AfterAll
  void stopCluster() {
    if (cluster != null) {
      cluster.close();
    }
  }

  /** One scenario's candidates and rounds. */
  final class Scenario implements AutoCloseable {
    final String name;
    final HaFleet fleet;
    final List<HaFleet.Member> mains = new ArrayList<>();
    final List<TermChecker.Injection> injections = new ArrayList<>();
    final List<String> probes = new ArrayList<>();
    final boolean splitBrainPossible;

    Scenario(String name, boolean splitBrainPossible) {
      this.name = name;
      this.splitBrainPossible = splitBrainPossible;
      this.fleet =
          new HaFleet(
              TARGET.resolve("ha-logs").resolve(resultsName()).resolve(name),
              cluster.primaryEndpointUrl(),
              nextKey++);
      for (int i = 0; i < 2; i++) {
        mains.add(fleet.launch("c", cluster.primaryEndpointUrl()));
      }
    }

    /**
     * Waits for a healthy cluster, a working leader and a contending standby, then launches the
     * round's probe on the primary's direct address and waits until it contends.
     */
    Round.Start ready(int rep, boolean withProbe) throws SQLException {
      cluster.awaitHealthy(Duration.ofSeconds(120));
      long since = System.nanoTime();
      HaFleet.Member leader =
          await()
              .atMost(Duration.ofSeconds(60))
              .until(() -> HaFleet.workingLeader(mains), Optional::isPresent)
              .orElseThrow();
      await()
          .atMost(Duration.ofSeconds(30))
          .until(
              () ->
                  mains.stream()
                      .filter(m -> m != leader)
                      .allMatch(m -> m.printed("ATTEMPT", since)));
      PatroniCluster.Node primary = cluster.leader().orElseThrow();
      int timeline = cluster.query(primary, "SELECT " + PatroniCluster.TIMELINE_SQL);
      if (withProbe) {
        HaFleet.Member probe = fleet.launch("probe", primary.directUrl());
        probes.add(probe.id);
        long launched = System.nanoTime();
        await().atMost(Duration.ofSeconds(30)).until(() -> probe.printed("ATTEMPT", launched));
      }
      Event term = leader.openTerm().orElseThrow();
      return new Round.Start(
          name,
          rep,
          0,
          primary.name(),
          timeline,
          leader.id,
          term.fields().get(0),
          term.fields().get(1));
    }

    /** The same start, struck now. */
    Round.Start struck(Round.Start s, long faultNanos) {
      injections.add(
          new TermChecker.Injection(
              s.rep(), s.leader(), s.leaderTerm(), faultNanos, true, name + "#" + s.rep()));
      return new Round.Start(
          s.scenario(),
          s.rep(),
          faultNanos,
          s.oldPrimary(),
          s.oldTimeline(),
          s.leader(),
          s.leaderTerm(),
          s.leaderToken());
    }

    /** Waits for the first passed check of a term on a timeline newer than the old primary's. */
    void awaitNewerTerm(Round.Start s, Duration within) {
      await()
          .atMost(within)
          .until(
              () ->
                  fleet.timeline().stream()
                      .anyMatch(
                          e ->
                              e.kind().equals("CHECK")
                                  && e.nanos() > s.faultNanos()
                                  && TermChecker.token(e.fields().get(1)).timeline()
                                      > s.oldTimeline()));
    }

    /** Ends the round: stops its probe, reads and records the figures. */
    Round finish(Round.Start s, NodeMonitor monitor) {
      return finish(s, monitor, java.util.Map.of());
    }

    /** Ends the round with figures the scenario measured itself. */
    Round finish(Round.Start s, NodeMonitor monitor, java.util.Map<String, String> extra) {
      for (HaFleet.Member m : fleet.members()) {
        if (probes.contains(m.id) && m.alive()) {
          m.stop();
        }
      }
      await()
          .atMost(Duration.ofSeconds(20))
          .until(
              () ->
                  fleet.members().stream()
                      .filter(m -> probes.contains(m.id))
                      .noneMatch(HaFleet.Member::alive));
      monitor.close();
      Round r = Round.read(s, monitor.samples(), fleet.timeline(), System.nanoTime());
      extra.forEach(r::put);
      results.add(r);
      return r;
    }

    /**
     * Stops the fleet and judges every event: the checker's violations fail the scenario unless a
     * split brain is possible in it, where they are the finding and are published; a stale effect
     * accepted by the fence fails it always.
     */
    @Override
    public void close() {
      List<String> killed = fleet.stopAll(Duration.ofSeconds(15));
      fleet.close();
      List<Event> timeline = fleet.timeline();
      Set<String> gone = new HashSet<>(killed);
      TermChecker.Result checked = TermChecker.analyse(timeline, gone, injections);
      List<String> stale = FenceJudge.staleAccepted(FenceJudge.effects(timeline));
      results.note(
          name,
          "checker: "
              + checked.terms().size()
              + " terms, "
              + checked.violations().size()
              + " violation(s); fence: "
              + FenceJudge.rejected(FenceJudge.effects(timeline))
              + " stale effect(s) rejected, "
              + stale.size()
              + " stale effect(s) accepted");
      for (String v : checked.violations()) {
        results.note(name, (splitBrainPossible ? "split brain: " : "VIOLATION: ") + v);
      }
      stale.forEach(v -> results.note(name, v));
      java.util.Optional<String> wentBack = FenceJudge.historyWentBack(timeline);
      wentBack.ifPresent(w -> results.note(name, "the cluster's history went back: " + w));
      if (!splitBrainPossible || wentBack.isEmpty()) {
        // A fence on the cluster can only accept a stale effect when the cluster itself lost
        // the newer history (out of scope: two primaries, then one history discarded).
        assertThat(stale).as("stale effects the fence accepted in %s", name).isEmpty();
      }
      if (!splitBrainPossible) {
        assertThat(checked.violations()).as("checker violations in %s", name).isEmpty();
      } else {
        // A candidate behind the primary endpoint that HAProxy sent to the old primary while two
        // primaries answered starts a term there under the older timeline: its token order goes
        // back exactly when the cluster's history did, and only then is that no finding.
        List<String> notProbe =
            checked.violations().stream()
                .filter(v -> probes.stream().noneMatch(p -> v.contains(p + "#")))
                .filter(v -> wentBack.isEmpty() || !v.startsWith("token did not increase"))
                .toList();
        assertThat(notProbe)
            .as("violations in %s by candidates on the primary endpoint (not the probe)", name)
            .isEmpty();
      }
    }
  }

  /**
   * Waits for the cluster to heal after a round; a node Patroni leaves stuck is repaired and the
   * round says so (a finding, not a failure of the library).
   */
  String rejoin(PatroniCluster.Node old) {
    return cluster
        .awaitHealthyOrRepair(old, Duration.ofSeconds(30))
        .map(why -> "REPAIRED (" + why.replace('\t', ' ') + ")")
        .orElse("by itself");
  }

  /** A figure as a number; fails when it is missing. */
  static double number(Round r, String column) {
    String v = r.figures().get(column);
    assertThat(v).as("%s of %s round %d", column, r.scenario(), r.rep()).isNotEmpty();
    return Double.parseDouble(v);
  }

  /** Holds a fault for its duration (the fault's length, not a wait for the code). */
  static void sleep(Duration d) {
    try {
      Thread.sleep(d.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
