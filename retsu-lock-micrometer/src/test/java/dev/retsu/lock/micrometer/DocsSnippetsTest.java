package dev.retsu.lock.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.testing.ReadmeSnippets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The micrometer snippets of every page are the regions that {@link ReadmeSnippetsIntegrationTest}
 * runs, with the imports they need shown. No database: javac attributes the source.
 */
class DocsSnippetsTest {

  @Test
  void micrometerSnippetsAreTheCodeThatTheIntegrationTestRuns() {
    assertThat(
            ReadmeSnippets.verifyPages(
                Path.of(".."),
                "micrometer",
                Path.of(
                    "src/test/java/dev/retsu/lock/micrometer/ReadmeSnippetsIntegrationTest.java")))
        .containsExactly("micrometer/wiring", "micrometer/collect", "micrometer/job");
  }
}
