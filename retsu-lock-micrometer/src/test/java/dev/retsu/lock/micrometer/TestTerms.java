package dev.retsu.lock.micrometer;

import dev.retsu.lock.FencingToken;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.Term;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.lang.reflect.Proxy;
import java.sql.SQLException;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;
import javax.sql.DataSource;

/**
 * Loops that never run, terms and scrape helpers for unit tests that feed made-up events to a
 * binder's listener.
 */
final class TestTerms {

  static final LockKey KEY = LockKey.of(42L);

  /** A data source for loops that are never started: any use of it fails. */
  private static final DataSource NOWHERE =
      (DataSource)
          Proxy.newProxyInstance(
              TestTerms.class.getClassLoader(),
              new Class<?>[] {DataSource.class},
              (proxy, method, args) -> {
                switch (method.getName()) {
                  case "toString":
                    return "NOWHERE";
                  case "hashCode":
                    return System.identityHashCode(proxy);
                  case "equals":
                    return proxy == args[0];
                  default:
                    throw new SQLException("a unit test's loop never runs");
                }
              });

  private TestTerms() {}

  /** A loop on {@link #KEY} that is built and never run (state NEW). */
  static LeaderLoop idleLoop(String candidateId) {
    return idleLoop(KEY, candidateId);
  }

  /** A loop that is built and never run (state NEW). */
  static LeaderLoop idleLoop(LockKey key, String candidateId) {
    return LeaderLoop.builder(NOWHERE, key).candidateId(candidateId).build();
  }

  static Term term(long number, String candidateId) {
    return new Term(
        number,
        KEY,
        candidateId,
        Instant.parse("2026-01-01T00:00:00Z"),
        new FencingToken(1, 0, 100 + number),
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
