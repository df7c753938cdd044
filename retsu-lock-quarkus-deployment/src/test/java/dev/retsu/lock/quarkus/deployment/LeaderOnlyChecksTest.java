package dev.retsu.lock.quarkus.deployment;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.quarkus.LeaderOnly;
import io.quarkus.test.QuarkusUnitTest;
import jakarta.enterprise.context.ApplicationScoped;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The build refuses a {@code @LeaderOnly} method that returns a value, naming the method. */
class LeaderOnlyChecksTest {

  @RegisterExtension
  static final QuarkusUnitTest APP =
      new QuarkusUnitTest()
          .withApplicationRoot(jar -> jar.addClasses(Counting.class))
          .overrideConfigKey("quarkus.datasource.db-kind", "postgresql")
          .overrideConfigKey("quarkus.datasource.jdbc.url", "jdbc:postgresql://127.0.0.1:1/none")
          .assertException(
              t ->
                  assertThat(t)
                      .hasStackTraceContaining(Counting.class.getName() + "#count")
                      .hasStackTraceContaining("must return void"));

  /** A leader-only method with a result: on a standby there would be nothing to return. */
  @ApplicationScoped
  static class Counting {
    @LeaderOnly("jobs")
    int count() {
      return 1;
    }
  }

  @Test
  void aLeaderOnlyMethodThatReturnsAValueFailsTheBuildNamingIt() {
    // the assertion is the expected failure above; reaching this method would mean it built
    throw new AssertionError("the build should have failed");
  }
}
