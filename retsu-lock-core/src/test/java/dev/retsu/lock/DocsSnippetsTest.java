package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.testing.ReadmeSnippets;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * Every Java block of every page (the README, docs/, module READMEs) is a snippet that a module's
 * test keeps equal to code that compiles and runs, with the imports it needs shown; this class
 * checks core's snippets and the rules that hold across pages. No database: javac attributes the
 * sources, the integration tests run them.
 */
class DocsSnippetsTest {

  private static final Path ROOT = Path.of("..");

  /** Snippet prefixes and the test that verifies each; a page may use no other. */
  private static final Map<String, String> VERIFIED_BY =
      Map.of(
          "core", "core DocsSnippetsTest",
          "micrometer", "micrometer DocsSnippetsTest",
          "examples", "examples DocsSnippetsTest",
          "boot", "examples SpringBootPageSnippetsTest",
          "shedlock", "shedlock ReportJobIntegrationTest",
          "quarkus", "quarkus-example QuarkusPageSnippetsTest",
          "spring-integration", "spring-integration DocsSnippetsIntegrationTest");

  @Test
  void coreSnippetsAreTheCodeThatTheIntegrationTestsRun() {
    assertThat(
            ReadmeSnippets.verifyPages(
                ROOT,
                "core",
                Path.of("src/test/java/dev/retsu/lock/ReadmeSnippetsIntegrationTest.java"),
                Path.of("src/test/java/dev/retsu/lock/SendInvoices.java")))
        .containsExactlyInAnyOrder(
            "core/leader",
            "core/acquire",
            "core/holder",
            "core/leader-loop",
            "core/leader-loop-close",
            "core/wait-mode",
            "core/watch",
            "core/fenced-write",
            "core/rolling-deploy",
            "core/yield");
  }

  @Test
  void everyJavaBlockOfEveryPageIsASnippetThatATestVerifies() {
    List<Path> pages = ReadmeSnippets.pages(ROOT);
    assertThat(pages)
        .as("the pages the checks read")
        .contains(
            ROOT.resolve("README.md"),
            ROOT.resolve("docs/leader-loop.md"),
            ROOT.resolve("retsu-lock-examples/README.md"));
    Map<Path, Integer> unmarked = new LinkedHashMap<>();
    Set<String> unknown = new TreeSet<>();
    for (Path page : pages) {
      int n = ReadmeSnippets.unmarkedJavaBlocks(page);
      if (n > 0) {
        unmarked.put(page, n);
      }
      for (String module : ReadmeSnippets.modules(page)) {
        if (!VERIFIED_BY.containsKey(module)) {
          unknown.add(module + " on " + page);
        }
      }
    }
    assertThat(unmarked)
        .as("java blocks without a snippet marker (and so without a test)")
        .isEmpty();
    assertThat(unknown).as("snippet prefixes that no test verifies: " + VERIFIED_BY).isEmpty();
  }
}
