package dev.retsu.lock.quarkus.deployment;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.quarkus.LeaderOnly;
import io.quarkus.test.QuarkusUnitTest;
import jakarta.enterprise.context.ApplicationScoped;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Start-up fails when a {@code @LeaderOnly} names no configured leader, naming both sides. */
class UnknownLeaderTest {

  @RegisterExtension
  static final QuarkusUnitTest APP =
      new QuarkusUnitTest()
          .withApplicationRoot(jar -> jar.addClasses(Misspelt.class))
          .overrideConfigKey("quarkus.datasource.db-kind", "postgresql")
          .overrideConfigKey("quarkus.datasource.jdbc.url", "jdbc:postgresql://127.0.0.1:1/none")
          .overrideConfigKey("retsu.lock.leaders.report.retry-interval", "1s")
          .assertException(
              t ->
                  assertThat(t)
                      .hasStackTraceContaining(
                          "@LeaderOnly(\"reprot\") on " + Misspelt.class.getName() + "#run")
                      .hasStackTraceContaining("retsu.lock.leaders has [report]"));

  /** A job whose leader's name is misspelt. */
  @ApplicationScoped
  static class Misspelt {
    @LeaderOnly("reprot")
    void run() {}
  }

  @Test
  void aLeaderOnlyNameThatNoLeaderHasFailsStartupNamingBoth() {
    throw new AssertionError("start-up should have failed");
  }
}
