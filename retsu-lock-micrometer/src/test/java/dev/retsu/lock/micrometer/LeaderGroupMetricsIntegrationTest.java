package dev.retsu.lock.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.LeaderGroup;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Group metrics on a real group: the fixed series, the per-key series and their budget. */
@ExtendWith(PostgresExtension.class)
class LeaderGroupMetricsIntegrationTest {

  private static final Duration WITHIN = Duration.ofSeconds(20);

  @Test
  void fixedAndPerKeySeriesFollowTheGroup(TestDatabase db) {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    LeaderGroup group =
        LeaderGroup.partitioned(db.dataSource(), "metrics-a", 10)
            .candidateId("m1")
            .sessions(2)
            .membershipInterval(Duration.ofMillis(200))
            .build();
    try (LeaderGroupMetrics metrics = LeaderGroupMetrics.of(group)) {
      metrics.bindTo(registry);
      assertThat(metrics.perKeySeries()).isTrue();
      group.start(ctx -> {});
      await().atMost(WITHIN).until(() -> registry.get(Names.GROUP_KEYS_HELD).gauge().value() == 10);
      assertThat(registry.get(Names.GROUP_KEYS).gauge().value()).isEqualTo(10);
      assertThat(registry.get(Names.GROUP_SESSIONS).gauge().value()).isEqualTo(2);
      assertThat(registry.get(Names.GROUP_ACQUISITIONS).functionCounter().count()).isEqualTo(10);
      assertThat(registry.get(Names.GROUP_KEY_LEADER).gauges())
          .hasSize(10)
          .allMatch(g -> g.value() == 1);
      assertThat(registry.get(Names.GROUP_KEY_TERM).gauges()).hasSize(10);
      await().atMost(WITHIN).until(() -> registry.get(Names.GROUP_MEMBERS).gauge().value() == 1);

      group.close();
      assertThat(registry.get(Names.GROUP_KEYS_HELD).gauge().value()).isZero();
      assertThat(
              registry
                  .get(Names.GROUP_LOST_TERMS)
                  .tag(Names.TAG_REASON, "closed")
                  .counter()
                  .count())
          .isEqualTo(10);
      assertThat(registry.get(Names.GROUP_TERM_DURATION).timer().count())
          .as("each key term, recorded as it ended")
          .isEqualTo(10);
      assertThat(registry.get(Names.GROUP_KEY_LEADER).gauges()).allMatch(g -> g.value() == 0);
    } finally {
      group.close();
    }
    assertThat(registry.getMeters()).isEmpty();
  }

  @Test
  void aboveTheBudgetOnlyTheFixedSeriesExist(TestDatabase db) {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    LeaderGroup group = LeaderGroup.partitioned(db.dataSource(), "metrics-b", 150).build();
    try (LeaderGroupMetrics metrics = LeaderGroupMetrics.of(group)) {
      metrics.bindTo(registry);
      assertThat(metrics.perKeySeries()).isFalse();
      assertThat(registry.find(Names.GROUP_KEY_LEADER).gauges()).isEmpty();
      // 5 gauges, 2 function counters, 1 timer, one lost-terms counter per reason: nothing per key.
      assertThat(registry.getMeters()).hasSize(8 + dev.retsu.lock.LossReason.values().length);
      assertThatThrownBy(() -> metrics.bindTo(registry))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("bound to a registry already");
    } finally {
      group.close();
    }
    LeaderGroup small = LeaderGroup.partitioned(db.dataSource(), "metrics-c", 3).build();
    try (LeaderGroupMetrics none = LeaderGroupMetrics.builder(small).perKeyBudget(0).build()) {
      none.bindTo(registry);
      assertThat(registry.find(Names.GROUP_KEY_LEADER).gauges()).isEmpty();
      assertThat(registry.find(Names.GROUP_KEYS).gauges().stream().map(Gauge::value))
          .containsExactly(3.0);
    } finally {
      small.close();
    }
  }
}
