package dev.retsu.lock.ha;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Leader loops on a real Patroni cluster (three PostgreSQL 15 nodes, one etcd, HAProxy on the
 * primary endpoint), through a planned switchover, a crash of the primary's postmaster, a network
 * partition of the primary, a frozen Patroni on the primary and a stopped postmaster. Each scenario
 * runs {@code retsu.ha.reps} rounds (5 by default); its figures go to {@code
 * target/ha-results/patroni-failover.md}. Candidates: two through HAProxy, and each round a probe
 * connected directly to the primary of the moment (a client on the old primary's side of a
 * partition). Asserts the outcome per round, and at the end of each scenario that the checker found
 * no violation (outside a split brain) and the fence accepted no stale effect.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class PatroniFailoverIntegrationTest extends HaClusterTests {

  private final Random random = new Random(20261202L);

  @Override
  String resultsName() {
    return "patroni-failover";
  }

  private void jitter() {
    sleep(Duration.ofMillis(random.nextInt(300)));
  }

  @Test
  @Order(1)
  void switchoverEndsEveryTermAndTheNextTermHasANewerTimeline() throws Exception {
    try (Scenario sc = new Scenario("switchover", false)) {
      for (int rep = 1; rep <= REPS; rep++) {
        Round.Start s = sc.ready(rep, true);
        PatroniCluster.Node from = cluster.node(s.oldPrimary());
        PatroniCluster.Node to =
            cluster.nodes().stream().filter(n -> n != from).toList().get(rep % 2);
        NodeMonitor monitor = new NodeMonitor(cluster.nodes());
        jitter();
        Round.Start struck = sc.struck(s, System.nanoTime());
        cluster.switchover(from, to);
        sc.awaitNewerTerm(struck, Duration.ofSeconds(60));
        Round r = sc.finish(struck, monitor, Map.of("old_node_rejoined", rejoin(from)));
        assertThat(r.figures().get("new_primary")).isEqualTo(to.name());
        assertThat(r.figures().get("old_leader_end")).isNotEqualTo("KEPT");
        assertThat(r.figures().get("token_newer")).isEqualTo("true");
        assertThat(number(r, "two_primaries_ms")).as("two primaries in a switchover").isLessThan(0);
      }
    }
  }

  @Test
  @Order(2)
  void killMinus9OfThePrimaryPostmaster() throws Exception {
    try (Scenario sc = new Scenario("postmaster-kill-9", false)) {
      for (int rep = 1; rep <= REPS; rep++) {
        Round.Start s = sc.ready(rep, true);
        NodeMonitor monitor = new NodeMonitor(cluster.nodes());
        jitter();
        Round.Start struck = sc.struck(s, System.nanoTime());
        PatroniCluster.Node old = cluster.node(s.oldPrimary());
        cluster.signalPostmaster(old, "KILL");
        sc.awaitNewerTerm(struck, Duration.ofSeconds(90));
        Round r = sc.finish(struck, monitor, Map.of("old_node_rejoined", rejoin(old)));
        assertThat(r.figures().get("old_leader_end")).isNotEqualTo("KEPT");
        assertThat(r.figures().get("token_newer")).isEqualTo("true");
      }
    }
  }

  @Test
  @Order(3)
  void partitionOfThePrimaryFromTheDcsItsPeersAndHaproxy() throws Exception {
    try (Scenario sc = new Scenario("partition", true)) {
      for (int rep = 1; rep <= REPS; rep++) {
        Round.Start s = sc.ready(rep, true);
        PatroniCluster.Node old = cluster.node(s.oldPrimary());
        NodeMonitor monitor = new NodeMonitor(cluster.nodes());
        jitter();
        Round.Start struck = sc.struck(s, System.nanoTime());
        cluster.partition(old);
        try {
          sc.awaitNewerTerm(struck, Duration.ofSeconds(90));
          // keep the partition a few seconds longer: what the old primary does meanwhile
          sleep(Duration.ofSeconds(4));
        } finally {
          cluster.heal();
        }
        Round r = sc.finish(struck, monitor, Map.of("old_node_rejoined", rejoin(old)));
        assertThat(r.figures().get("old_leader_end")).isNotEqualTo("KEPT");
        assertThat(r.figures().get("token_newer")).isEqualTo("true");
      }
    }
  }

  @Test
  @Order(4)
  void frozenPatroniOnThePrimaryLeavesTwoPrimariesUntilItResumes() throws Exception {
    try (Scenario sc = new Scenario("patroni-frozen", true)) {
      for (int rep = 1; rep <= REPS; rep++) {
        Round.Start s = sc.ready(rep, true);
        PatroniCluster.Node old = cluster.node(s.oldPrimary());
        NodeMonitor monitor = new NodeMonitor(cluster.nodes());
        jitter();
        Round.Start struck = sc.struck(s, System.nanoTime());
        cluster.signalAgent(old, "STOP");
        try {
          sc.awaitNewerTerm(struck, Duration.ofSeconds(90));
          // the agent stays frozen 5 s past the takeover: a long GC, a stalled VM, a stuck disk
          sleep(Duration.ofSeconds(5));
        } finally {
          cluster.signalAgent(old, "CONT");
        }
        Round r = sc.finish(struck, monitor, Map.of("old_node_rejoined", rejoin(old)));
        assertThat(r.figures().get("old_leader_end")).isNotEqualTo("KEPT");
        assertThat(r.figures().get("token_newer")).isEqualTo("true");
      }
    }
  }

  @Test
  @Order(5)
  void stoppedPostmasterOnThePrimaryIsNoFailover() throws Exception {
    try (Scenario sc = new Scenario("postmaster-sigstop", true)) {
      for (int rep = 1; rep <= Math.min(REPS, 3); rep++) {
        Round.Start s = sc.ready(rep, true);
        PatroniCluster.Node old = cluster.node(s.oldPrimary());
        NodeMonitor monitor = new NodeMonitor(cluster.nodes());
        jitter();
        Round.Start struck = sc.struck(s, System.nanoTime());
        cluster.signalPostmaster(old, "STOP");
        try {
          // longer than the leader key's ttl: would Patroni fail over?
          sleep(Duration.ofSeconds(cluster.settings().ttl() + 5L));
        } finally {
          cluster.signalPostmaster(old, "CONT");
        }
        Round r = sc.finish(struck, monitor, Map.of("old_node_rejoined", rejoin(old)));
        results.note(
            "postmaster-sigstop",
            "round "
                + rep
                + ": leader after the stop "
                + cluster.leader().map(PatroniCluster.Node::name).orElse("none")
                + ", old leader "
                + r.figures().get("old_leader_end"));
        assertThat(r.figures().get("promoted_ms")).as("a promotion").isEmpty();
        assertThat(r.figures().get("old_leader_end")).isEqualTo("KEPT");
      }
    }
  }
}
