package dev.retsu.lock.examples.quarkus;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.testing.ReadmeSnippets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The Quarkus page's code (docs/quarkus.md) is this application's {@link ReportJob} and {@link
 * TenantJobs}, whole, with the imports it needs; and the page has no other Java block.
 */
class QuarkusPageSnippetsTest {

  private static final Path PAGE = Path.of("../docs/quarkus.md");

  @Test
  void theQuarkusPageShowsExactlyTheExamplesCodeWithItsImports() {
    assertThat(
            ReadmeSnippets.verify(
                PAGE,
                "quarkus",
                Path.of("src/main/java/dev/retsu/lock/examples/quarkus/ReportJob.java"),
                Path.of("src/main/java/dev/retsu/lock/examples/quarkus/TenantJobs.java")))
        .containsExactly("quarkus/report-job", "quarkus/tenant-jobs");
    assertThat(ReadmeSnippets.unmarkedJavaBlocks(PAGE)).isZero();
  }
}
