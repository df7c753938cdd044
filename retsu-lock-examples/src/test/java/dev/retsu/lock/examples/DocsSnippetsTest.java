package dev.retsu.lock.examples;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.testing.ReadmeSnippets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The examples' snippets on every page are regions of the programs that run (the quickstart, the
 * collector, the group example), with the imports they need shown. No database: javac attributes
 * the sources, and the integration tests run the programs.
 */
class DocsSnippetsTest {

  @Test
  void examplesSnippetsAreRegionsOfTheProgramsThatRun() {
    assertThat(
            ReadmeSnippets.verifyPages(
                Path.of(".."),
                "examples",
                Path.of("src/main/java/dev/retsu/lock/examples/quickstart/Quickstart.java"),
                Path.of("src/main/java/dev/retsu/lock/examples/collector/QueueStateCollector.java"),
                Path.of("src/main/java/dev/retsu/lock/examples/group/PartitionedWorkers.java")))
        .containsExactlyInAnyOrder("examples/group", "examples/quickstart", "examples/collector");
  }
}
