package dev.retsu.lock.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.Tags;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import org.junit.jupiter.api.Test;

/** Job runs by outcome and the last success, scraped from a real Prometheus registry. */
class LeaderJobMetricsTest {

  @Test
  void jobRunsAreCountedByOutcomeFromZeroAndRemovedExactlyOnClose() {
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    LeaderJobMetrics jobs =
        LeaderJobMetrics.builder("billing", "worker-1")
            .clock(Clock.fixed(Instant.ofEpochSecond(1_700_000_000), ZoneOffset.UTC))
            .build();
    LeaderJobMetrics.Job declared = jobs.job("Invoices.send"); // before the bind
    jobs.bindTo(registry);
    String scrape = registry.scrape();
    assertThat(scrape)
        .contains(
            "retsu_lock_job_runs_total{candidate=\"worker-1\",job=\"Invoices.send\",lock=\"billing\",outcome=\"success\"} 0.0",
            "retsu_lock_job_last_success_seconds{candidate=\"worker-1\",job=\"Invoices.send\",lock=\"billing\"} 0.0");
    declared.succeeded(Duration.ofMillis(20));
    declared.succeeded(Duration.ofMillis(30));
    declared.failed(Duration.ofMillis(5), new IllegalStateException("boom"));
    LeaderJobMetrics.Job later = jobs.job("task"); // after the bind: registered at once
    assertThat(jobs.job("task")).isSameAs(later);
    scrape = registry.scrape();
    assertThat(scrape)
        .contains(
            "retsu_lock_job_runs_total{candidate=\"worker-1\",job=\"Invoices.send\",lock=\"billing\",outcome=\"success\"} 2.0",
            "retsu_lock_job_runs_total{candidate=\"worker-1\",job=\"Invoices.send\",lock=\"billing\",outcome=\"failure\"} 1.0",
            "retsu_lock_job_last_success_seconds{candidate=\"worker-1\",job=\"Invoices.send\",lock=\"billing\"} 1.7E9",
            "retsu_lock_job_runs_total{candidate=\"worker-1\",job=\"task\",lock=\"billing\",outcome=\"success\"} 0.0",
            "retsu_lock_job_duration_seconds_count{candidate=\"worker-1\",job=\"Invoices.send\",lock=\"billing\",outcome=\"success\"} 2");
    registry.counter("unrelated").increment();
    jobs.close();
    jobs.close(); // idempotent
    assertThat(registry.getMeters())
        .extracting(m -> m.getId().getName())
        .containsExactly("unrelated");
    declared.succeeded(Duration.ofMillis(1)); // after close: counts nothing, never throws
    assertThat(registry.scrape()).doesNotContain("retsu_lock_job");
  }

  @Test
  void badInputIsRefusedWithTheValue() {
    assertThatThrownBy(() -> LeaderJobMetrics.builder(" ", "c"))
        .hasMessage("lock must not be blank, but was \" \"");
    assertThatThrownBy(() -> LeaderJobMetrics.builder("l", "c").tags(Tags.of("job", "x")))
        .hasMessage("tags must not use the key job, which LeaderJobMetrics sets itself");
    LeaderJobMetrics jobs = LeaderJobMetrics.builder("l", "c").build();
    assertThatThrownBy(() -> jobs.job(""))
        .hasMessage("job name must be 1 to 200 characters, not blank, but was \"\"");
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    jobs.bindTo(registry);
    assertThatThrownBy(() -> jobs.bindTo(registry)).hasMessageContaining("is bound already");
    jobs.close();
    assertThatThrownBy(() -> jobs.bindTo(registry)).hasMessageContaining("is closed");
  }
}
