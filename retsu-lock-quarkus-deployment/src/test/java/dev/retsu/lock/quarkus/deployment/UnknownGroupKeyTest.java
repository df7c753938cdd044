package dev.retsu.lock.quarkus.deployment;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.quarkus.LeaderOnly;
import io.quarkus.test.QuarkusUnitTest;
import jakarta.enterprise.context.ApplicationScoped;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Start-up fails when a {@code @LeaderOnly} names a key its group does not have, naming both. */
class UnknownGroupKeyTest {

  @RegisterExtension
  static final QuarkusUnitTest APP =
      new QuarkusUnitTest()
          .withApplicationRoot(jar -> jar.addClasses(WrongKey.class))
          .overrideConfigKey("quarkus.datasource.db-kind", "postgresql")
          .overrideConfigKey("quarkus.datasource.jdbc.url", "jdbc:postgresql://127.0.0.1:1/none")
          .overrideConfigKey("retsu.lock.groups.g.keys", "k1,k2")
          .assertException(
              t ->
                  assertThat(t)
                      .hasStackTraceContaining(
                          "@LeaderOnly(value = \"g\", key = \"k3\") on "
                              + WrongKey.class.getName()
                              + "#run")
                      .hasStackTraceContaining("not in retsu.lock.groups.g.keys [k1, k2]"));

  /** A job whose key is not one of its group's. */
  @ApplicationScoped
  static class WrongKey {
    @LeaderOnly(value = "g", key = "k3")
    void run() {}
  }

  @Test
  void aLeaderOnlyKeyThatTheGroupDoesNotHaveFailsStartupNamingTheProperty() {
    throw new AssertionError("start-up should have failed");
  }
}
