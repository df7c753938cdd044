package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/** The failover timing as one value: its presets, its checks, and the rules a recipe applies. */
class FailoverTimingTest {

  private final DataSource ds = new PGSimpleDataSource();

  @Test
  void theDefaultReplacesAVanishedLeaderWithinElevenSeconds() {
    FailoverTiming t = FailoverTiming.DEFAULT;
    assertThat(t.heartbeatInterval()).isEqualTo(Duration.ofSeconds(2));
    assertThat(t.selfFenceAfter()).isEqualTo(Duration.ofSeconds(8));
    assertThat(t.keepaliveIdle()).isEqualTo(Duration.ofSeconds(5));
    assertThat(t.keepaliveInterval()).isEqualTo(Duration.ofSeconds(2));
    assertThat(t.keepaliveCount()).isEqualTo(3);
    assertThat(t.idleSessionTimeout()).isEqualTo(Duration.ofSeconds(11));
    assertThat(t.roundTripTimeout()).isEqualTo(AdvisoryLock.DEFAULT_ROUND_TRIP_TIMEOUT);
    assertThat(t.bounds().keepaliveBound()).isEqualTo(Duration.ofSeconds(11));
    assertThat(t)
        .hasToString(
            "FailoverTiming[DEFAULT heartbeat PT2S, selfFenceAfter PT8S, keepalives PT5S/PT2S/3,"
                + " idleSessionTimeout PT11S, roundTripTimeout PT10S]");
  }

  @Test
  void theFastPresetReplacesOneWithinTwoSecondsOfSilence() {
    FailoverTiming t = FailoverTiming.FAST;
    assertThat(t.heartbeatInterval()).isEqualTo(Duration.ofMillis(500));
    assertThat(t.selfFenceAfter()).isEqualTo(Duration.ofSeconds(1));
    assertThat(t.bounds().keepaliveBound()).isEqualTo(Duration.ofSeconds(2));
    assertThat(t.idleSessionTimeout()).isEqualTo(Duration.ofSeconds(2));
    assertThat(t.roundTripTimeout()).isEqualTo(Duration.ofSeconds(1));
    assertThat(t.toString()).startsWith("FailoverTiming[FAST ");
  }

  @Test
  void aChangeMakesANewValueAndLeavesThePresetAlone() {
    FailoverTiming custom = FailoverTiming.DEFAULT.withHeartbeatInterval(Duration.ofSeconds(1));
    assertThat(custom.heartbeatInterval()).isEqualTo(Duration.ofSeconds(1));
    assertThat(custom.selfFenceAfter()).isEqualTo(FailoverTiming.DEFAULT.selfFenceAfter());
    assertThat(FailoverTiming.DEFAULT.heartbeatInterval()).isEqualTo(Duration.ofSeconds(2));
    assertThat(custom).isNotEqualTo(FailoverTiming.DEFAULT);
    assertThat(custom.toString()).startsWith("FailoverTiming[heartbeat PT1S");
    FailoverTiming back = custom.withHeartbeatInterval(Duration.ofSeconds(2));
    assertThat(back).isEqualTo(FailoverTiming.DEFAULT).hasSameHashCodeAs(FailoverTiming.DEFAULT);
  }

  @Test
  void eachChangeIsCheckedAndNamesTheValue() {
    FailoverTiming t = FailoverTiming.DEFAULT;
    assertThatThrownBy(() -> t.withHeartbeatInterval(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("heartbeatInterval")
        .hasMessageContaining("PT0S");
    assertThatThrownBy(() -> t.withSelfFenceAfter(Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("selfFenceAfter")
        .hasMessageContaining("PT-1S");
    assertThatThrownBy(
            () -> t.withServerKeepalives(Duration.ofMillis(1500), Duration.ofSeconds(1), 3))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("PT1.5S");
    assertThatThrownBy(
            () -> t.withServerKeepalives(Duration.ofSeconds(1), Duration.ofSeconds(1), 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("keepaliveCount");
    assertThatThrownBy(() -> t.withServerIdleSessionTimeout(Duration.ofMillis(500)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("idleSessionTimeout");
    assertThatThrownBy(() -> t.withRoundTripTimeout(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("roundTripTimeout");
    assertThat(t.withServerIdleSessionTimeout(Duration.ZERO).idleSessionTimeout()).isZero();
  }

  @Test
  void aRecipeRefusesATimingWhoseLeaderCouldActAfterTheServerFreedItsKey() {
    FailoverTiming tooLate = FailoverTiming.FAST.withSelfFenceAfter(Duration.ofSeconds(8));
    assertThatThrownBy(() -> LeaderLoop.builder(ds, LockKey.of(1)).timing(tooLate).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("selfFenceAfter")
        .hasMessageContaining("PT2S");
    assertThatThrownBy(
            () -> LeaderGroup.builder(ds, "g", List.of(LockKey.of(1))).timing(tooLate).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("selfFenceAfter");
    FailoverTiming slowBeat = FailoverTiming.DEFAULT.withHeartbeatInterval(Duration.ofSeconds(5));
    assertThatThrownBy(() -> LeaderLoop.builder(ds, LockKey.of(1)).timing(slowBeat).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("heartbeatInterval");
  }

  @Test
  void fastFailoverIsTheFastTimingAndWhatTheStandbysNeed() {
    LeaderLoopBuilder loop = LeaderLoop.builder(ds, LockKey.of(1)).fastFailover();
    assertThat(loop.timing).isSameAs(FailoverTiming.FAST);
    assertThat(loop.retryInterval).isEqualTo(LeaderLoopBuilder.FAST_RETRY_INTERVAL);
    LeaderGroupBuilder group = LeaderGroup.builder(ds, "g", List.of(LockKey.of(1))).fastFailover();
    assertThat(group.timing).isSameAs(FailoverTiming.FAST);
    assertThat(group.refreshTimeout).isEqualTo(LeaderGroupBuilder.FAST_REFRESH_TIMEOUT);
    assertThat(LeaderLoop.builder(ds, LockKey.of(1)).timing).isSameAs(FailoverTiming.DEFAULT);
    assertThatThrownBy(() -> LeaderLoop.builder(ds, LockKey.of(1)).timing(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("timing");
  }
}
