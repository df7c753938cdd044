package dev.retsu.lock.ha;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.testing.TermChecker;
import dev.retsu.lock.testing.TermChecker.Event;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Can the token of a term on the old primary be lost on failover, and what does that do to
 * "strictly increasing"? Per replication mode (Patroni's {@code synchronous_mode} off and on), each
 * round: the replication connections to the primary drop every packet from now on (nftables: the
 * replicas lag while the primary keeps serving), the leader's session is terminated so that a new
 * term must take its token while nothing replicates, then the primary's whole node crashes (kill -9
 * of Patroni and the postmaster) and the links are restored. (Stopping the replicas' WAL receivers
 * with SIGSTOP instead loses nothing: the WAL already sent waits in their sockets and is read on
 * SIGCONT, as the first run showed.) After the failover the harness asks the new primary about the
 * transaction id of the last token the old primary issued ({@code pg_xact_status}) and looks for
 * the fence writes accepted under it. Figures: {@code target/ha-results/patroni-replication.md}.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class PatroniReplicationModeIntegrationTest extends HaClusterTests {

  private static final int ROUNDS = Math.min(REPS, 3);

  @Override
  String resultsName() {
    return "patroni-replication";
  }

  @Test
  @Order(1)
  void asynchronousReplicationCanLoseATermsTokenButTheNewTimelineStillOrdersIt() throws Exception {
    cluster.setSynchronousMode(false);
    try (Scenario sc = new Scenario("lag-crash-async", false)) {
      for (int rep = 1; rep <= ROUNDS; rep++) {
        Round r = round(sc, rep, false);
        assertThat(r.figures().get("stall_term_token"))
            .as("a term started during the stall")
            .isNotEqualTo("none");
        assertThat(r.figures().get("token_newer")).isEqualTo("true");
      }
    }
  }

  @Test
  @Order(2)
  void synchronousModeStillElectsDuringTheStallAndTheNewTimelineOrdersTheToken() throws Exception {
    cluster.setSynchronousMode(true);
    try (Scenario sc = new Scenario("lag-crash-sync", false)) {
      for (int rep = 1; rep <= ROUNDS; rep++) {
        Round r = round(sc, rep, true);
        // The token's commit waits for the primary alone: a term starts although the synchronous
        // standby receives nothing, and the promoted standby's newer timeline orders its token.
        assertThat(r.figures().get("stall_term_token"))
            .as("a term started during the stall")
            .isNotEqualTo("none");
        assertThat(r.figures().get("token_newer")).isEqualTo("true");
        // The leader's own writes still wait for the standby: none was accepted, none lost.
        assertThat(r.figures().get("stall_effects_lost")).isEqualTo("0");
      }
    } finally {
      cluster.setSynchronousMode(false);
    }
  }

  private Round round(Scenario sc, int rep, boolean synchronous) throws Exception {
    Round.Start s = sc.ready(rep, false);
    PatroniCluster.Node old = cluster.node(s.oldPrimary());
    HaFleet.Member leader =
        sc.fleet.members().stream().filter(m -> m.id.equals(s.leader())).findFirst().orElseThrow();
    int backend = Integer.parseInt(leader.openTerm().orElseThrow().fields().get(2));
    cluster.cutReplication(old);
    long stallAt = System.nanoTime();
    Map<String, String> extra = new LinkedHashMap<>();
    Round.Start struck;
    NodeMonitor monitor;
    try {
      cluster.query(old, "SELECT pg_terminate_backend(" + backend + ")::int");
      // a new term starts on the old primary while nothing replicates, in both modes: its token's
      // commit waits for the primary alone
      Optional<Event> stallTerm = awaitTermAfter(sc, stallAt, Duration.ofSeconds(8));
      Round.Start base = s;
      if (stallTerm.isPresent()) {
        Event a = stallTerm.get();
        extra.put("stall_term_token", a.fields().get(1));
        if (!synchronous) {
          // Asynchronous: the term's writes commit on the primary alone. Synchronous: they wait
          // for the standby that receives nothing, so none is accepted before the crash.
          await()
              .atMost(Duration.ofSeconds(10))
              .until(() -> effectsOf(sc, a, "ACCEPTED").size() >= 2);
        }
        base =
            new Round.Start(
                s.scenario(),
                rep,
                0,
                s.oldPrimary(),
                s.oldTimeline(),
                a.member(),
                a.fields().get(0),
                a.fields().get(1));
      } else {
        extra.put("stall_term_token", "none");
      }
      results.note(
          sc.name, "round " + rep + " attempts during the stall: " + attempts(sc, stallAt));
      monitor = new NodeMonitor(cluster.nodes());
      struck = sc.struck(base, System.nanoTime());
      cluster.crashNode(old);
      // The links stay cut until a newer term runs: the dead primary's kernel still holds the WAL
      // its walsenders had queued and would deliver it once the links heal (a killed process is
      // not a dead machine). By then the replicas have closed those connections.
      sc.awaitNewerTerm(struck, Duration.ofSeconds(120));
    } finally {
      cluster.restoreReplication();
    }
    PatroniCluster.Node now = cluster.leader().orElseThrow();
    TermChecker.Token last = TermChecker.token(struck.leaderToken());
    TermChecker.Token first = firstNewerToken(sc, struck);
    // A new primary that issued the same or a smaller xid never saw the old one; asking it about
    // that xid then would describe its own transaction.
    extra.put(
        "stall_token_on_new_primary",
        first.xid() <= last.xid() ? "LOST (xid reissued)" : xactStatus(now, last.xid()));
    if (!extra.get("stall_term_token").equals("none")) {
      Event a =
          sc.fleet.timeline().stream()
              .filter(
                  e ->
                      e.kind().equals("ACQUIRED") && e.fields().get(1).equals(struck.leaderToken()))
              .findFirst()
              .orElseThrow();
      List<Event> accepted = effectsOf(sc, a, "ACCEPTED");
      int present = effectRowsOn(now, a.member(), a.fields().get(0), a.fields().get(1));
      extra.put("stall_effects_accepted", Integer.toString(accepted.size()));
      extra.put("stall_effects_lost", Integer.toString(accepted.size() - present));
    }
    cluster.restartAgent(old);
    extra.put("old_node_rejoined", rejoin(old));
    return sc.finish(struck, monitor, extra);
  }

  /** The first term acquired after {@code since}, waiting at most {@code within}; none after. */
  private static Optional<Event> awaitTermAfter(Scenario sc, long since, Duration within) {
    try {
      return await()
          .atMost(within)
          .until(
              () ->
                  sc.fleet.timeline().stream()
                      .filter(e -> e.kind().equals("ACQUIRED") && e.nanos() > since)
                      .findFirst(),
              Optional::isPresent);
    } catch (ConditionTimeoutException none) {
      return Optional.empty();
    }
  }

  private static TermChecker.Token firstNewerToken(Scenario sc, Round.Start struck) {
    return sc.fleet.timeline().stream()
        .filter(
            e ->
                e.kind().equals("ACQUIRED")
                    && e.nanos() > struck.faultNanos()
                    && TermChecker.token(e.fields().get(1)).timeline() > struck.oldTimeline())
        .map(e -> TermChecker.token(e.fields().get(1)))
        .findFirst()
        .orElseThrow();
  }

  private static List<Event> effectsOf(Scenario sc, Event acquired, String outcome) {
    return sc.fleet.timeline().stream()
        .filter(
            e ->
                e.kind().equals("EFFECT")
                    && e.member().equals(acquired.member())
                    && e.fields().get(0).equals(acquired.fields().get(0))
                    && e.fields().get(2).equals(outcome))
        .toList();
  }

  private static String attempts(Scenario sc, long since) {
    Map<String, Integer> byResult = new TreeMap<>();
    for (Event e : sc.fleet.timeline()) {
      if (e.kind().equals("ATTEMPT") && e.nanos() > since) {
        byResult.merge(e.fields().get(0), 1, Integer::sum);
      }
    }
    return byResult.toString();
  }

  /** What the new primary knows of a transaction id: committed, ..., or LOST (not yet issued). */
  private static String xactStatus(PatroniCluster.Node n, long xid) throws SQLException {
    try (Connection c = PatroniCluster.connect(n.directUrl(), 5);
        PreparedStatement ps = c.prepareStatement("SELECT pg_xact_status(?::text::xid8)")) {
      ps.setLong(1, xid);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        String status = rs.getString(1);
        return status == null ? "unknown" : status;
      }
    } catch (SQLException e) {
      if ("22023".equals(e.getSQLState())) {
        return "LOST"; // "transaction ID ... is in the future": the new history never issued it
      }
      throw e;
    }
  }

  /**
   * The accepted effects of one term found on a node: by member, term number and token, since every
   * scenario's fleet numbers its members and terms from 1 again in the same table.
   */
  private static int effectRowsOn(PatroniCluster.Node n, String member, String term, String token)
      throws SQLException {
    try (Connection c = PatroniCluster.connect(n.directUrl(), 5);
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT count(*)::int FROM retsu_ha_effects WHERE candidate = ? AND term = ?"
                    + " AND token = ? AND version IS NOT NULL")) {
      ps.setString(1, member);
      ps.setLong(2, Long.parseLong(term));
      ps.setString(3, TermChecker.token(token).toString());
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    }
  }
}
