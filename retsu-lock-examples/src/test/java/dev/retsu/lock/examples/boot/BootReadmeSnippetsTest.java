package dev.retsu.lock.examples.boot;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.testing.ReadmeSnippets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The README's Spring Boot snippets are regions of {@link BootCollectorApplication}, the code that
 * {@link BootCollectorIntegrationTest} runs as separate JVMs.
 */
class BootReadmeSnippetsTest {

  @Test
  void readmeShowsExactlyTheBootCodeThatRuns() {
    assertThat(
            ReadmeSnippets.verify(
                Path.of("../README.md"),
                "boot",
                Path.of(
                    "src/main/java/dev/retsu/lock/examples/boot/BootCollectorApplication.java")))
        .containsExactly("boot/properties", "boot/collector", "boot/leader-only");
  }
}
