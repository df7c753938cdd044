package dev.retsu.lock.spring.integration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.Term;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.integration.leader.Context;
import org.springframework.integration.leader.event.DefaultLeaderEventPublisher;

/**
 * The behaviour Spring Integration's {@code LockRegistryLeaderInitiatorTests} asks of its initiator
 * (start and stop, yield, competing candidates, failed-to-acquire events, a publisher that throws),
 * plus what a lock that is a session adds (revoke when the session is lost, then contend again),
 * against PostgreSQL.
 */
@ExtendWith(PostgresExtension.class)
class RetsuLeaderInitiatorIntegrationTest {

  private static final Duration AWAIT = Duration.ofSeconds(30);

  private TestDatabase db;
  private HikariDataSource pool;

  @BeforeEach
  void start(TestDatabase db) {
    this.db = db;
    this.pool = SpringIntegrationTesting.pool(db, "initiator", 8);
  }

  @AfterEach
  void stop() {
    pool.close();
  }

  private RetsuLeaderInitiator initiator(Recorder r) {
    return RetsuLeaderInitiator.builder(pool, r)
        .leaderEventPublisher(r)
        .retryInterval(Duration.ofMillis(200))
        .yieldCooldown(Duration.ofSeconds(1))
        .build();
  }

  @Test
  void grantsTheRoleOnStartAndRevokesItBeforeReleasingOnStop() throws Exception {
    Recorder a = new Recorder("node-a", "cluster");
    RetsuLeaderInitiator initiator = initiator(a);
    try {
      assertThat(initiator.getContext().isLeader()).isFalse();
      assertThat(initiator.getContext().getRole()).isEqualTo("cluster");
      initiator.start();
      assertThat(initiator.isRunning()).isTrue();
      await().atMost(AWAIT).until(() -> a.grantedEvents.get() == 1);
      assertThat(a.granted).hasValue(1);
      assertThat(initiator.getContext().isLeader()).isTrue();
      Term term = initiator.currentTerm().orElseThrow();
      a.revokeProbe =
          () -> {
            try {
              return SpringIntegrationTesting.holderPid(db, initiator.key());
            } catch (java.sql.SQLException e) {
              throw new IllegalStateException(e);
            }
          };
      assertThat(SpringIntegrationTesting.holderPid(db, initiator.key()))
          .isEqualTo(term.backendPid());
      // leadership stays while nothing happens: no second grant, no revoke
      await()
          .during(Duration.ofMillis(500))
          .atMost(AWAIT)
          .until(() -> initiator.getContext().isLeader() && a.revoked.get() == 0);
      assertThat(a.granted).hasValue(1);

      initiator.stop();
      assertThat(a.revoked).hasValue(1);
      assertThat(a.revokedEvents).hasValue(1);
      // onRevoked ran while this node's session still held the lock (released only after it),
      // and, as in Spring Integration, with isLeader() already false
      assertThat(a.probedAtRevoke).isEqualTo(term.backendPid());
      assertThat(a.leaderWhenRevoked).isFalse();
      assertThat(initiator.isRunning()).isFalse();
      assertThat(initiator.getContext().isLeader()).isFalse();
      assertThat(SpringIntegrationTesting.holderPid(db, initiator.key())).isEqualTo(-1);

      // restart: a stopped initiator contends again
      initiator.start();
      await().atMost(AWAIT).until(() -> a.granted.get() == 2);
      assertThat(initiator.getContext().isLeader()).isTrue();
    } finally {
      initiator.destroy();
    }
    assertThat(a.revoked).hasValue(2);
  }

  @Test
  void aLostSessionRevokesTheRoleAndTheNodeStaysACandidate() throws Exception {
    Recorder a = new Recorder("node-a", "lost");
    RetsuLeaderInitiator initiator = initiator(a);
    try {
      initiator.start();
      await().atMost(AWAIT).until(() -> a.granted.get() == 1);
      int pid = initiator.currentTerm().orElseThrow().backendPid();

      assertThat(db.terminateBackend(pid)).isTrue();
      await().atMost(AWAIT).until(() -> a.revoked.get() == 1);
      assertThat(a.revokedEvents).hasValue(1);
      // still a candidate: it wins again, on a new session
      await().atMost(AWAIT).until(() -> a.granted.get() == 2);
      assertThat(initiator.currentTerm().orElseThrow().backendPid()).isNotEqualTo(pid);
    } finally {
      initiator.destroy();
    }
  }

  @Test
  void yieldHandsTheRoleToAnotherCandidateAndStaysACandidate() throws Exception {
    Recorder a = new Recorder("node-a", "yield");
    Recorder b = new Recorder("node-b", "yield");
    RetsuLeaderInitiator first = initiator(a);
    RetsuLeaderInitiator second = initiator(b);
    try {
      first.start();
      await().atMost(AWAIT).until(() -> a.granted.get() == 1);
      second.start();
      await()
          .during(Duration.ofMillis(500))
          .atMost(AWAIT)
          .until(() -> b.granted.get() == 0 && first.getContext().isLeader());

      Term term = first.currentTerm().orElseThrow();
      a.revokeProbe =
          () -> {
            try {
              return SpringIntegrationTesting.holderPid(db, first.key());
            } catch (java.sql.SQLException e) {
              throw new IllegalStateException(e);
            }
          };
      Context ctx = a.lastContext;
      ctx.yield();
      await().atMost(AWAIT).until(() -> a.revoked.get() == 1);
      // a voluntary end: onRevoked ran while this node's session still held the lock
      assertThat(a.probedAtRevoke).isEqualTo(term.backendPid());
      await().atMost(AWAIT).until(() -> b.granted.get() == 1);
      assertThat(second.getContext().isLeader()).isTrue();
      assertThat(first.getContext().isLeader()).isFalse();
      assertThat(first.isRunning()).as("a node that yielded is still a candidate").isTrue();

      // the other candidate stops: the one that yielded takes the role back
      second.stop();
      await().atMost(AWAIT).until(() -> a.granted.get() == 2);
      assertThat(first.getContext().isLeader()).isTrue();
    } finally {
      first.destroy();
      second.destroy();
    }
  }

  @Test
  void yieldOnANodeThatDoesNotLeadDoesNothing() throws Exception {
    Recorder a = new Recorder("node-a", "idle-yield");
    RetsuLeaderInitiator initiator = initiator(a);
    try {
      initiator.getContext().yield(); // not started
      initiator.start();
      await().atMost(AWAIT).until(() -> a.granted.get() == 1);
      assertThat(a.revoked).hasValue(0);
    } finally {
      initiator.destroy();
    }
  }

  @Test
  void failedToAcquireEventsArePublishedOnlyOnRequest() throws Exception {
    Recorder a = new Recorder("node-a", "failed-events");
    Recorder b = new Recorder("node-b", "failed-events");
    Recorder c = new Recorder("node-c", "failed-events");
    RetsuLeaderInitiator leader = initiator(a);
    RetsuLeaderInitiator quiet = initiator(b);
    RetsuLeaderInitiator loud =
        RetsuLeaderInitiator.builder(pool, c)
            .leaderEventPublisher(c)
            .retryInterval(Duration.ofMillis(200))
            .publishFailedEvents(true)
            .build();
    try {
      leader.start();
      await().atMost(AWAIT).until(() -> a.granted.get() == 1);
      quiet.start();
      loud.start();
      await().atMost(AWAIT).until(() -> c.failedEvents.get() >= 2);
      assertThat(b.failedEvents).hasValue(0);
      assertThat(c.granted).hasValue(0);
    } finally {
      leader.destroy();
      quiet.destroy();
      loud.destroy();
    }
  }

  @Test
  void aPublisherThatThrowsDoesNotCostTheRole() throws Exception {
    Recorder a = new Recorder("node-a", "throwing-publisher");
    RetsuLeaderInitiator initiator =
        RetsuLeaderInitiator.builder(pool, a)
            .leaderEventPublisher(
                new DefaultLeaderEventPublisher() {
                  @Override
                  public void publishOnGranted(Object source, Context context, String role) {
                    throw new IllegalStateException("intentional");
                  }
                })
            .build();
    try {
      initiator.start();
      await().atMost(AWAIT).until(() -> a.granted.get() == 1);
      await()
          .during(Duration.ofMillis(500))
          .atMost(AWAIT)
          .until(() -> initiator.getContext().isLeader() && a.revoked.get() == 0);
    } finally {
      initiator.destroy();
    }
  }

  @Test
  void anOnGrantedThatThrowsRevokesAndTriesAgain() throws Exception {
    Recorder a =
        new Recorder("node-a", "throwing-candidate") {
          @Override
          public void onGranted(Context ctx) {
            if (granted.incrementAndGet() == 1) {
              throw new IllegalStateException("intentional");
            }
          }
        };
    RetsuLeaderInitiator initiator =
        RetsuLeaderInitiator.builder(pool, a)
            .leaderEventPublisher(a)
            .retryInterval(Duration.ofMillis(200))
            .loop(l -> l.maxBackoff(Duration.ofMillis(500)))
            .build();
    try {
      initiator.start();
      await().atMost(AWAIT).until(() -> a.revoked.get() == 1);
      await().atMost(AWAIT).until(() -> a.granted.get() == 2 && initiator.getContext().isLeader());
    } finally {
      initiator.destroy();
    }
  }
}
