package dev.retsu.lock.examples.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.examples.collector.Schema;
import dev.retsu.lock.examples.load.QueueLoad;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The seed's two-collector walkthrough, end to end: two collector JVMs against one PostgreSQL with
 * a 1 s interval.
 */
@ExtendWith(PostgresExtension.class)
class CollectorFailoverIntegrationTest {

  private static final Duration STARTUP = Duration.ofSeconds(90);
  private static final Duration TAKEOVER = Duration.ofSeconds(30);
  private static final Pattern HELD_ELSEWHERE =
      Pattern.compile(
          "(?m)^retsu_lock_attempts_total\\{[^}]*result=\"held_elsewhere\"[^}]*} (\\S+)$");

  private final List<CollectorProcess> processes = new ArrayList<>();

  @BeforeEach
  void queues(TestDatabase db) throws Exception {
    try (Connection c = db.connect()) {
      Schema.migrate(c);
    }
    db.execute("TRUNCATE retsu_queue_message; TRUNCATE retsu_queue_state");
    QueueLoad load = new QueueLoad(db.dataSource(), 3, 10, 1);
    load.seed(20);
  }

  @AfterEach
  void killCollectors() {
    processes.forEach(CollectorProcess::close);
  }

  private CollectorProcess start(TestDatabase db, String name) {
    CollectorProcess p = CollectorProcess.start(db, name, "1s");
    processes.add(p);
    return p;
  }

  /** Starts two collectors and returns {leader, standby} once the leader exports queue state. */
  private CollectorProcess[] twoCollectors(TestDatabase db) {
    CollectorProcess a = start(db, "collector-a");
    CollectorProcess b = start(db, "collector-b");
    await("a leader")
        .atMost(STARTUP)
        .pollInterval(Duration.ofMillis(100))
        .until(() -> a.isLeaderByLog() || b.isLeaderByLog());
    CollectorProcess leader = a.isLeaderByLog() ? a : b;
    CollectorProcess standby = leader == a ? b : a;
    await("the leader's queue gauges")
        .atMost(STARTUP)
        .until(() -> leader.metrics().contains("queue_messages_ready{"));
    // The standby is up and has tried, and failed, to take the lock since the leader took it.
    await("the standby contending")
        .atMost(STARTUP)
        .until(() -> heldElsewhere(standby) >= 2 && standby.get("/health/ready") != null);
    return new CollectorProcess[] {leader, standby};
  }

  private static double heldElsewhere(CollectorProcess p) {
    Matcher m = HELD_ELSEWHERE.matcher(p.metrics());
    return m.find() ? Double.parseDouble(m.group(1)) : 0;
  }

  @Test
  void onlyTheLeaderExportsQueueStateAndAStandbyTakesOverAfterSigterm(TestDatabase db)
      throws Exception {
    CollectorProcess[] pair = twoCollectors(db);
    CollectorProcess leader = pair[0];
    CollectorProcess standby = pair[1];

    assertThat(leader.linesEndingWith(CollectorCommand.ACQUIRED_LINE)).isOne();
    assertThat(standby.linesEndingWith(CollectorCommand.ACQUIRED_LINE)).isZero();
    assertThat(leader.metrics())
        .contains("queue_messages_ready{queue=\"queue-1\"} 20.0")
        .contains("queue_messages_in_flight{")
        .contains("queue_messages_scheduled{")
        .contains("queue_messages_dead{")
        .contains("queue_oldest_ready_age_seconds{")
        .contains("queue_state_collection_success");
    String standbyMetrics = standby.metrics();
    assertThat(standbyMetrics)
        .doesNotContain("queue_messages_ready")
        .doesNotContain("queue_state_collection_success")
        .contains("jvm_memory_used_bytes")
        .contains("process_uptime_seconds")
        .contains("hikaricp_connections")
        .contains("retsu_lock_leader{")
        .containsPattern("retsu_lock_leader\\{[^}]*state=\"standby\"[^}]*} 1.0");
    assertThat(leader.metrics())
        .containsPattern("retsu_lock_leader\\{[^}]*state=\"leader\"[^}]*} 1.0");
    assertThat(leader.get("/leader"))
        .contains("\"role\":\"leader\"")
        .contains("\"candidate\":\"" + leader.name + "\"")
        .containsPattern("\"fencingToken\":\"[A-T]\\d+[A-T]\\d+[A-T]\\d+\"");
    assertThat(standby.get("/leader"))
        .contains("\"role\":\"standby\"")
        .contains("\"term\":null")
        .contains("\"candidate\":\"" + leader.name + "\",\"fencingToken\"");
    assertThat(standby.get("/health/live")).contains("UP");
    assertThat(db.advisoryLockHolders()).hasSize(1);

    // SIGTERM, as Ctrl-C or a deployment stop. Through the handle: Process.destroy() would also
    // close our end of its output, and the lines it logs while stopping would be lost.
    leader.process.toHandle().destroy();

    await("the old leader exits").atMost(TAKEOVER).until(leader::exitedAndDrained);
    assertThat(leader.process.exitValue()).as(leader.output()).isZero();
    assertThat(leader.logged("leadership released: CLOSED")).as(leader.output()).isTrue();
    await("the standby takes over")
        .atMost(TAKEOVER)
        .until(() -> standby.linesEndingWith(CollectorCommand.ACQUIRED_LINE) == 1);
    await("and exports queue state")
        .atMost(TAKEOVER)
        .until(() -> standby.metrics().contains("queue_messages_ready{queue=\"queue-1\"}"));
    assertThat(standby.get("/leader")).contains("\"role\":\"leader\"");
  }

  @Test
  void aLeaderWhoseSessionIsTerminatedExitsNonZeroAndTheStandbyTakesOver(TestDatabase db)
      throws Exception {
    CollectorProcess[] pair = twoCollectors(db);
    CollectorProcess leader = pair[0];
    CollectorProcess standby = pair[1];
    List<Integer> holders = db.advisoryLockHolders();
    assertThat(holders).hasSize(1);
    assertThat(leader.get("/leader")).contains("\"backendPid\":" + holders.get(0));

    assertThat(db.terminateBackend(holders.get(0))).isTrue();

    await("the old leader exits").atMost(TAKEOVER).until(leader::exitedAndDrained);
    assertThat(leader.process.exitValue()).as(leader.output()).isEqualTo(1);
    assertThat(leader.logged("leadership lost: SESSION_LOST")).as(leader.output()).isTrue();
    // 57P01 when the FATAL message is read, 08xxx when the socket is found closed first.
    assertThat(leader.logged("Leadership lost (SESSION_LOST, SQLState "))
        .as(leader.output())
        .isTrue();
    await("the standby takes over")
        .atMost(TAKEOVER)
        .until(() -> standby.linesEndingWith(CollectorCommand.ACQUIRED_LINE) == 1);
    await("and exports queue state")
        .atMost(TAKEOVER)
        .until(() -> standby.metrics().contains("queue_messages_ready{queue=\"queue-1\"}"));
    assertThat(db.advisoryLockHolders()).hasSize(1).doesNotContain(holders.get(0));
  }

  @Test
  void aFailedRefreshExitsWithStatusOneAsTheRetsuCollectorDoes(TestDatabase db) throws Exception {
    CollectorProcess leader = start(db, "collector-f");
    await("a leader").atMost(STARTUP).until(leader::isLeaderByLog);
    await("its queue gauges")
        .atMost(STARTUP)
        .until(() -> leader.metrics().contains("queue_messages_ready{"));
    try {
      // The state query's table goes away: the next refresh fails. Core's default policy
      // (STEP_DOWN) would keep the process up and contending; the collector sets EXIT.
      db.execute("ALTER TABLE retsu_queue_state RENAME TO retsu_queue_state_gone");

      await("the leader exits").atMost(TAKEOVER).until(leader::exitedAndDrained);
      assertThat(leader.process.exitValue()).as(leader.output()).isEqualTo(1);
      assertThat(leader.logged("Leadership lost (REFRESH_FAILED")).as(leader.output()).isTrue();
      assertThat(db.advisoryLockHolders()).isEmpty();
    } finally {
      db.execute("ALTER TABLE IF EXISTS retsu_queue_state_gone RENAME TO retsu_queue_state");
    }
  }

  @Test
  void aWaitingStandbyTakesOverTheMomentTheLeaderStops(TestDatabase db) throws Exception {
    CollectorProcess leader = start(db, "collector-p");
    await("a leader").atMost(STARTUP).until(leader::isLeaderByLog);
    CollectorProcess waiter =
        CollectorProcess.start(
            db,
            "collector-w",
            "1s",
            CollectorProcess.freePort(),
            Map.of("RETSU_WORKER__STATE_COLLECTOR__TAKEOVER", "wait"));
    processes.add(waiter);
    // The waiting standby holds exactly one session, blocked in pg_advisory_lock.
    await("the waiter blocked in pg_advisory_lock")
        .atMost(STARTUP)
        .until(() -> db.clientSessions("retsu-lock:collector-w") == 1);
    assertThat(waiter.get("/leader")).contains("\"takeover\":\"wait\"");

    leader.process.toHandle().destroy();

    await("the waiter takes over")
        .atMost(TAKEOVER)
        .until(() -> waiter.linesEndingWith(CollectorCommand.ACQUIRED_LINE) == 1);
    await("and exports queue state")
        .atMost(TAKEOVER)
        .until(() -> waiter.metrics().contains("queue_messages_ready{queue=\"queue-1\"}"));
  }
}
