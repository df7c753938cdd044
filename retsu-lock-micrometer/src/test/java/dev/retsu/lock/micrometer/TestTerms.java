package dev.retsu.lock.micrometer;

import dev.retsu.lock.FencingToken;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.Term;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;

/** Terms and scrape helpers for unit tests that call listener methods directly. */
final class TestTerms {

  static final LockKey KEY = LockKey.of(42L);

  private TestTerms() {}

  static Term term(long number, String candidateId) {
    return new Term(
        number,
        KEY,
        candidateId,
        Instant.parse("2026-01-01T00:00:00Z"),
        new FencingToken(1, 100 + number),
        1000 + (int) number);
  }

  static PrometheusMeterRegistry prometheus() {
    return new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  }

  /** The sample lines of a scrape (no comments) whose metric name starts with a prefix. */
  static List<String> samples(PrometheusMeterRegistry registry, String prefix) {
    return Arrays.stream(registry.scrape().split("\n"))
        .filter(l -> !l.startsWith("#") && l.startsWith(prefix))
        .collect(Collectors.toList());
  }
}
