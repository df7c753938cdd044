package dev.retsu.lock.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The CI-sized run of every benchmark part, so the harness cannot rot. Asserts structure only:
 * every scenario of every config produced a measurement, the result files were written, and retsu
 * never had two leaders at once. Never asserts timings.
 */
class BenchmarkSmokeIntegrationTest {

  @Test
  void smokeRunMeasuresEveryScenarioOfEveryConfigAndWritesTheResults(@TempDir Path out)
      throws Exception {
    BenchmarkMain.run("smoke", "--out", out.toString());

    Path results = out.resolve("results.md");
    assertThat(results).exists();
    String md = Files.readString(results);
    List<String> csv = Files.readAllLines(out.resolve("failover.csv"));
    List<String> configs = List.of("retsu-poll", "retsu-wait", "shedlock", "spring");
    for (String config : configs) {
      for (FailoverBenchmark.Scenario scenario : FailoverBenchmark.Scenario.values()) {
        assertThat(csv)
            .as("a measurement of %s %s", config, scenario)
            .anySatisfy(
                line -> {
                  assertThat(line).startsWith(config + "," + scenario + ",");
                  assertThat(line).doesNotContain(",TIMEOUT,");
                });
      }
    }
    assertThat(csv.stream().filter(l -> l.startsWith("retsu")))
        .as("retsu never overlaps")
        .allSatisfy(l -> assertThat(l.split(",")[6]).isEqualTo("0.000"));
    assertThat(md)
        .contains(
            "## Failover", "## Idle cost", "## Scale at rest", "## JMH", "Ratios retsu / peer");
    for (String config : configs) {
      assertThat(md).containsPattern("\\| " + config + " \\| [0-9.]+ \\| [0-9.]+ \\|");
    }
    assertThat(md).contains("tryAcquireHeldElsewhere", "isHeldHeartbeat", "leaseClose");
  }
}
