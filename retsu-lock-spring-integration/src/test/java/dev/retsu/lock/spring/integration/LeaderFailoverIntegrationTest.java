package dev.retsu.lock.spring.integration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.testing.ChildJvm;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Two JVMs contend for one role: the survivor takes it over when the leader's JVM dies. */
@ExtendWith(PostgresExtension.class)
class LeaderFailoverIntegrationTest {

  @Test
  void theOtherJvmTakesTheRoleWhenTheLeadersJvmIsKilledOrStopped(TestDatabase db) throws Exception {
    try (HikariDataSource pool = SpringIntegrationTesting.pool(db, "failover", 4)) {
      Recorder here = new Recorder("parent", "failover");
      RetsuLeaderInitiator parent =
          RetsuLeaderInitiator.builder(pool, here)
              .leaderEventPublisher(here)
              .retryInterval(Duration.ofMillis(200))
              .build();
      try {
        try (Node killed = Node.start(db, "killed")) {
          await().atMost(Duration.ofSeconds(60)).until(() -> killed.logged("GRANTED killed"));
          parent.start();
          await()
              .during(Duration.ofMillis(600))
              .atMost(Duration.ofSeconds(10))
              .until(() -> here.granted.get() == 0);

          killed.process.destroyForcibly(); // kill -9: its session ends with the process
          await().atMost(Duration.ofSeconds(10)).until(() -> here.granted.get() == 1);
          assertThat(parent.getContext().isLeader()).isTrue();
        }

        // and back: the parent stops gracefully while a second JVM waits
        try (Node next = Node.start(db, "next")) {
          await().atMost(Duration.ofSeconds(60)).until(() -> next.logged("STARTED next"));
          parent.stop();
          assertThat(here.revoked).hasValue(1);
          await().atMost(Duration.ofSeconds(10)).until(() -> next.logged("GRANTED next"));
          // SIGTERM (through the handle: Process.destroy() would also close our end of its output)
          next.process.toHandle().destroy(); // its shutdown hook revokes before releasing
          await().atMost(Duration.ofSeconds(10)).until(() -> next.logged("REVOKED next"));
        }
      } finally {
        parent.destroy();
      }
    }
  }

  private static final class Node extends ChildJvm {
    private Node(String name, ProcessBuilder builder) {
      super(name, builder);
    }

    static Node start(TestDatabase db, String id) {
      return new Node(
          id,
          new ProcessBuilder(
              ChildJvm.javaCommand(
                  List.of("-Xmx96m"),
                  InitiatorMain.class,
                  List.of(db.jdbcUrl(), db.user(), db.password(), "failover", id))));
    }
  }
}
