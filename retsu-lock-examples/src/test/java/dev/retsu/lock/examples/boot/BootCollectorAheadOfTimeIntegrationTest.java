package dev.retsu.lock.examples.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.examples.boot.BootCollectorIntegrationTest.BootProcess;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Spring Boot collector processed ahead of time (Spring Boot's {@code process-aot}, in the
 * build's {@code aot} profile, which alone runs this class: the default build excludes it) and
 * started with {@code -Dspring.aot.enabled=true}: the context is the generated one, not one built
 * by reflection at start, and the leader leads, is UP, and runs its {@code @LeaderOnly} job on the
 * lock's session. Not a native image: that needs GraalVM; the hints a native image would need are
 * checked by the runtime hints test of the Spring Boot module.
 */
@ExtendWith(PostgresExtension.class)
class BootCollectorAheadOfTimeIntegrationTest {

  @Test
  void theCollectorProcessedAheadOfTimeStartsLeadsAndRunsItsJob(TestDatabase db, @TempDir Path tmp)
      throws Exception {
    assertThat(
            getClass().getResource("BootCollectorApplication__ApplicationContextInitializer.class"))
        .as("the classes process-aot generates: run with -Paot")
        .isNotNull();
    // The starter's runtime hints reached the metadata a native image would be built from.
    try (java.io.InputStream in =
        getClass()
            .getResourceAsStream(
                "/META-INF/native-image/dev.retsu/retsu-lock-examples/reachability-metadata.json")) {
      assertThat(in).as("reachability-metadata.json from process-aot").isNotNull();
      assertThat(new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8))
          .contains(
              "\"java.sql.Connection\"",
              "\"java.sql.PreparedStatement\"",
              "\"pgStream\"",
              "\"pgInput\"",
              "\"evictConnection\"",
              "dev.retsu.lock.spring.boot.RetsuLockProperties$Leader");
    }
    try (BootProcess a =
        BootProcess.start(db, tmp, "aot-a", "poll", List.of("-Dspring.aot.enabled=true"))) {
      await().atMost(Duration.ofSeconds(90)).until(() -> a.role().equals("leader"));
      assertThat(a.lines()).anySatisfy(l -> assertThat(l).contains("Starting AOT-processed"));
      assertThat(a.health()).contains("\"status\":\"UP\"", "\"retsuLock\"");
      await()
          .atMost(Duration.ofSeconds(30))
          .until(
              () ->
                  db.queryInts(
                              "SELECT count(*)::int FROM retsu_boot_work WHERE candidate = ?",
                              "aot-a")
                          .get(0)
                      >= 2);
      assertThat(a.prometheus())
          .containsPattern("retsu_lock_leader\\{[^}]*state=\"leader\"[^}]*} 1.0");
    }
  }
}
