package dev.retsu.lock.examples.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Like the Retsu worker, a collector that cannot start properly exits non-zero at once. */
@ExtendWith(PostgresExtension.class)
class CollectorStartupIntegrationTest {

  private static final Duration EXIT = Duration.ofSeconds(60);

  @Test
  void anInitialDatabaseErrorExitsWithStatusOne(TestDatabase db) {
    int nobodyListens = CollectorProcess.freePort();
    try (CollectorProcess p =
        CollectorProcess.start(
            db,
            "collector-nodb",
            "1s",
            CollectorProcess.freePort(),
            Map.of(
                "RETSU_DATABASE__URL",
                "jdbc:postgresql://127.0.0.1:" + nobodyListens + "/retsu?connectTimeout=2"))) {
      await().atMost(EXIT).until(p::exitedAndDrained);

      assertThat(p.process.exitValue()).as(p.output()).isEqualTo(1);
      assertThat(p.output())
          .contains("Initial database error; exiting with status 1")
          .doesNotContain("Management endpoint on");
    }
  }

  @Test
  void aManagementPortInUseExitsWithStatusOneAndNamesTheVariable(TestDatabase db) throws Exception {
    try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        CollectorProcess p =
            CollectorProcess.start(db, "collector-port", "1s", taken.getLocalPort(), Map.of())) {
      await().atMost(EXIT).until(p::exitedAndDrained);

      assertThat(p.process.exitValue()).as(p.output()).isEqualTo(1);
      assertThat(p.output())
          .contains("Cannot serve the management endpoint on 127.0.0.1:" + taken.getLocalPort())
          .contains("RETSU_WORKER__MANAGEMENT__PORT");
      assertThat(db.advisoryLockHolders()).isEmpty();
    }
  }

  @Test
  void withoutADatabaseUrlItStartsAnEmbeddedPostgresSaysSoAndStopsItOnSigterm(TestDatabase db) {
    try (CollectorProcess p =
        CollectorProcess.start(
            db,
            "collector-embedded",
            "1s",
            CollectorProcess.freePort(),
            Map.of("RETSU_DATABASE__URL", "", "RETSU_DATABASE__USER", ""))) {
      await().atMost(EXIT).until(p::isLeaderByLog);
      await().atMost(EXIT).until(() -> p.metrics().contains("\nqueue_state_collection_success"));
      assertThat(p.output())
          .contains("RETSU_DATABASE__URL is not set: starting an embedded PostgreSQL")
          .contains("Embedded PostgreSQL is up: jdbc:postgresql://127.0.0.1:");

      p.process.toHandle().destroy(); // SIGTERM

      await().atMost(EXIT).until(p::exitedAndDrained);
      assertThat(p.process.exitValue()).as(p.output()).isZero();
      assertThat(p.output()).contains("Stopped embedded PostgreSQL");
    }
  }
}
