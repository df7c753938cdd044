package dev.retsu.lock.quarkus.deployment;

import static org.assertj.core.api.Assertions.assertThat;

import io.quarkus.test.QuarkusUnitTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Start-up fails when one name is both a leader and a group: {@code @LeaderOnly} and the leadership
 * events name one or the other, so the name must say which.
 */
class LeaderAndGroupNamedAlikeTest {

  @RegisterExtension
  static final QuarkusUnitTest APP =
      new QuarkusUnitTest()
          .overrideConfigKey("quarkus.datasource.db-kind", "postgresql")
          .overrideConfigKey("quarkus.datasource.jdbc.url", "jdbc:postgresql://127.0.0.1:1/none")
          .overrideConfigKey("retsu.lock.leaders.shards.takeover", "wait")
          .overrideConfigKey("retsu.lock.groups.shards.keys", "a,b")
          .assertException(
              t ->
                  assertThat(t)
                      .hasStackTraceContaining(
                          "retsu.lock.leaders and retsu.lock.groups both name [shards]"));

  @Test
  void aNameThatIsBothALeaderAndAGroupFailsStartupNamingIt() {
    throw new AssertionError("start-up should have failed");
  }
}
