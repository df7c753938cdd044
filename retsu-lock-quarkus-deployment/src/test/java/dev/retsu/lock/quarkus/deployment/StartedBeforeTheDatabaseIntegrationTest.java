package dev.retsu.lock.quarkus.deployment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.quarkus.RetsuLeaders;
import io.quarkus.test.QuarkusUnitTest;
import io.smallrye.health.SmallRyeHealthReporter;
import jakarta.inject.Inject;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An application started before its database (its data source's port has no server yet) starts, is
 * a healthy standby that says why it does not lead, and leads once the database is up; its group is
 * a healthy member that owns no key, and owns its keys once the database is up.
 */
class StartedBeforeTheDatabaseIntegrationTest {

  private static final QuarkusTestDb DB = QuarkusTestDb.named("quarkus_before_db");
  private static final int PORT = port();

  @RegisterExtension
  static final QuarkusUnitTest APP =
      new QuarkusUnitTest()
          .withApplicationRoot(
              jar -> jar.addClasses(QuarkusTestDb.class, TcpRelay.class, OurCheck.class))
          .overrideConfigKey("quarkus.http.test-port", "0")
          .overrideConfigKey("retsu.lock.leaders.jobs.retry-interval", "200ms")
          .overrideConfigKey("retsu.lock.groups.shards.keys", "s1,s2")
          .overrideConfigKey("retsu.lock.groups.shards.reconnect-interval", "200ms")
          .overrideConfigKey("quarkus.datasource.db-kind", "postgresql")
          .overrideConfigKey("quarkus.datasource.jdbc.url", relayUrl())
          .overrideConfigKey(
              "quarkus.datasource.username", DB.datasource().get("quarkus.datasource.username"))
          .overrideConfigKey(
              "quarkus.datasource.password", DB.datasource().get("quarkus.datasource.password"));

  @Inject RetsuLeaders leaders;
  @Inject SmallRyeHealthReporter health;

  @Test
  void anApplicationStartedBeforeItsDatabaseIsAHealthyStandbyAndLeadsOnceItIsUp() throws Exception {
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> details().contains("reason=database-unreachable"));
    assertThat(details()).contains("lastError=");
    assertThat(OurCheck.status(health.getReadiness())).as("%s", details()).isEqualTo("UP");
    assertThat(OurCheck.status(health.getLiveness())).isEqualTo("UP");
    assertThat(leaders.leader("jobs").isLeader()).isFalse();
    assertThat(String.valueOf(leaders.group("shards").details()))
        .as("a group started before its database")
        .contains("role=member", "owned=[]");

    Matcher m = Pattern.compile("//([^:/]+):(\\d+)/").matcher(url());
    assertThat(m.find()).isTrue();
    try (TcpRelay relay = TcpRelay.start(PORT, m.group(1), Integer.parseInt(m.group(2)))) {
      await().atMost(Duration.ofSeconds(30)).until(() -> leaders.leader("jobs").isLeader());
      assertThat(OurCheck.status(health.getReadiness())).isEqualTo("UP");
      assertThat(details()).contains("role=leader");
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> leaders.group("shards").ownedKeys().size() == 2);
      assertThat(OurCheck.status(health.getReadiness())).isEqualTo("UP");
      assertThat(relay.connections()).as("sessions through the relay").isPositive();
    }
  }

  private String details() {
    return String.valueOf(leaders.leader("jobs").details());
  }

  private static String url() {
    return DB.datasource().get("quarkus.datasource.jdbc.url");
  }

  private static String relayUrl() {
    return url().replaceFirst("//[^/]+/", "//127.0.0.1:" + PORT + "/");
  }

  /** One free port for both loads of this class (see {@link QuarkusTestDb}). */
  private static int port() {
    String key = "retsu.quarkus.test.before-db.port";
    if (System.getProperty(key) == null) {
      try {
        System.setProperty(key, Integer.toString(TcpRelay.freePort()));
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    return Integer.parseInt(System.getProperty(key));
  }
}
