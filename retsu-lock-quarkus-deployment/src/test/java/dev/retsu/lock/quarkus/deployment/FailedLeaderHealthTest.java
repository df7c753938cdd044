package dev.retsu.lock.quarkus.deployment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.quarkus.RetsuLeader;
import dev.retsu.lock.quarkus.RetsuLeaders;
import io.quarkus.test.QuarkusUnitTest;
import io.smallrye.health.SmallRyeHealthReporter;
import jakarta.inject.Inject;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A leader that will never lead again in this process ({@code fail-fast=true} and no database at
 * the first attempt) is DOWN on readiness and on liveness, with the error. No database is reached:
 * the port refuses.
 */
class FailedLeaderHealthTest {

  @RegisterExtension
  static final QuarkusUnitTest APP =
      new QuarkusUnitTest()
          .withApplicationRoot(jar -> jar.addClasses(OurCheck.class))
          .overrideConfigKey("quarkus.http.test-port", "0")
          .overrideConfigKey("quarkus.datasource.db-kind", "postgresql")
          .overrideConfigKey("quarkus.datasource.jdbc.url", "jdbc:postgresql://127.0.0.1:1/none")
          .overrideConfigKey("retsu.lock.leaders.jobs.fail-fast", "true");

  @Inject RetsuLeaders leaders;
  @Inject SmallRyeHealthReporter health;

  @Test
  void aLeaderThatFailedForGoodIsDownOnReadinessAndLiveness() {
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> leaders.leader("jobs").role() == RetsuLeader.Role.FAILED);
    assertThat(OurCheck.status(health.getReadiness())).isEqualTo("DOWN");
    assertThat(OurCheck.status(health.getLiveness())).isEqualTo("DOWN");
    assertThat(leaders.leader("jobs").details()).containsKey("error");
  }
}
