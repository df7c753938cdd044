package dev.retsu.lock.examples.bootdocs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.testing.ReadmeSnippets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The Spring Boot page's snippets (docs/spring-boot.md) are whole classes, imports included, that
 * compile here: {@code ReportJobConfiguration} (run by {@code
 * ReportJobConfigurationIntegrationTest}), {@link LockDataSourceConfiguration} and {@link
 * TenantJobsConfiguration}; and the page has no Java block that is not one of them. Each is in a
 * package of its own, so that no application's component scan picks them up.
 */
class SpringBootPageSnippetsTest {

  private static final Path PAGE = Path.of("../docs/spring-boot.md");

  @Test
  void theSpringBootPageShowsExactlyTheCodeThatCompilesWithItsImports() {
    String dir = "src/main/java/dev/retsu/lock/examples/reportjob/";
    String test = "src/test/java/dev/retsu/lock/examples/bootdocs/";
    assertThat(
            ReadmeSnippets.verify(
                PAGE,
                "boot",
                Path.of(dir + "ReportJobConfiguration.java"),
                Path.of(test + "LockDataSourceConfiguration.java"),
                Path.of(test + "TenantJobsConfiguration.java")))
        .containsExactly("boot/report-job", "boot/lock-data-source", "boot/group-jobs");
    assertThat(ReadmeSnippets.unmarkedJavaBlocks(PAGE)).isZero();
  }
}
