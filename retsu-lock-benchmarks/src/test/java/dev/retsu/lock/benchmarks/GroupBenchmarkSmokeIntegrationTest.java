package dev.retsu.lock.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The CI-sized run of the group benchmark (200 keys over 2 member JVMs), so the harness cannot rot.
 * Asserts structure only: every scenario produced a measurement and the file names the commit and
 * the load. Never asserts timings.
 */
class GroupBenchmarkSmokeIntegrationTest {

  @Test
  void groupRunMeasuresEveryScenarioAndWritesTheResults(@TempDir Path out) throws Exception {
    BenchmarkMain.run(
        "group", "--out", out.toString(), "--group-keys", "200", "--group-members", "2");

    String md = Files.readString(out.resolve("group-results.md"));
    assertThat(md).contains("- commit ").contains("load average before ");
    assertThat(md.lines().filter(l -> l.startsWith("| 200 | 2 |")))
        .hasSize(3)
        .allSatisfy(row -> assertThat(row.split("\\|")[5].strip()).as(row).isNotEqualTo("-"));
    assertThat(md).contains("cold start").contains("kill -9 of one member").contains("joins");
  }
}
