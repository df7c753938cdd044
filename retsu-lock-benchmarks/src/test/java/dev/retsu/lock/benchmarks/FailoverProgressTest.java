package dev.retsu.lock.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.benchmarks.FailoverBenchmark.Outcome;
import dev.retsu.lock.benchmarks.FailoverBenchmark.Sample;
import dev.retsu.lock.benchmarks.FailoverBenchmark.Scenario;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** A failover progress line says what it measured, so a peer's overlap never reads as an alarm. */
class FailoverProgressTest {

  private static Sample sample(Outcome outcome, long gapMicros, long overlapMicros) {
    return new Sample(
        "spring", Scenario.PARTITION, 1, outcome, gapMicros, -1, -1, overlapMicros, -1, "");
  }

  @Test
  void progressLineNamesAnOverlapAsTheMeasuredTwoLeadersOfThatConfig() {
    assertThat(
            FailoverBenchmark.describe(
                sample(Outcome.MOVED, 1_601_300, 1_888_300), Duration.ofSeconds(6)))
        .isEqualTo(
            "failover of spring, PARTITION #1 (blackhole partition of the leader): new leader"
                + " after 1601.3 ms; the old leader still acted 1888.3 ms into the new term (two"
                + " leaders, measured)")
        .doesNotContain("OVERLAP");
  }

  @Test
  void progressLineSaysWhatKeptAndTimeoutMean() {
    assertThat(FailoverBenchmark.describe(sample(Outcome.MOVED, 369_600, 0), Duration.ZERO))
        .endsWith("): new leader after 369.6 ms");
    assertThat(FailoverBenchmark.describe(sample(Outcome.KEPT, -1, 0), Duration.ZERO))
        .endsWith("): the old leader kept leading (no takeover)");
    assertThat(FailoverBenchmark.describe(sample(Outcome.TIMEOUT, -1, 0), Duration.ofSeconds(6)))
        .endsWith("): no leader within PT6S");
  }
}
