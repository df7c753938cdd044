package dev.retsu.lock.quarkus.deployment;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.quarkus.LeaderOnly;
import dev.retsu.lock.quarkus.RetsuLeaders;
import io.quarkus.test.QuarkusUnitTest;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * With {@code retsu.lock.enabled=false} no leader or group starts and every {@code @LeaderOnly}
 * method is skipped, with or without a key: turning the library off never runs a leader-only job on
 * every replica at once.
 */
class DisabledTest {

  @RegisterExtension
  static final QuarkusUnitTest APP =
      new QuarkusUnitTest()
          .withApplicationRoot(jar -> jar.addClasses(Counted.class))
          .overrideConfigKey("quarkus.datasource.db-kind", "postgresql")
          .overrideConfigKey("quarkus.datasource.jdbc.url", "jdbc:postgresql://127.0.0.1:1/none")
          .overrideConfigKey("retsu.lock.enabled", "false")
          .overrideConfigKey("retsu.lock.leaders.jobs.takeover", "wait")
          .overrideConfigKey("retsu.lock.groups.g.keys", "k1");

  @Inject Counted counted;
  @Inject RetsuLeaders leaders;

  /** Leader-only methods that count their runs. */
  @Singleton // no client proxy: the test reads the field
  static class Counted {
    final AtomicInteger runs = new AtomicInteger();

    @LeaderOnly("jobs")
    void leader() {
      runs.incrementAndGet();
    }

    @LeaderOnly(value = "g", key = "k1")
    void key() {
      runs.incrementAndGet();
    }
  }

  @Test
  void disabledStartsNoLeaderAndSkipsEveryLeaderOnlyMethod() {
    counted.leader();
    counted.key();
    assertThat(counted.runs).as("runs with the library turned off").hasValue(0);
    assertThat(leaders.all()).isEmpty();
    assertThat(leaders.groups()).isEmpty();
  }
}
