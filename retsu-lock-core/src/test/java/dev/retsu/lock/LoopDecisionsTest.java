package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retsu.lock.fakes.DelegatingDataSource;
import dev.retsu.lock.fakes.FakeTime;
import dev.retsu.lock.internal.loop.LoopSettings;
import dev.retsu.lock.internal.loop.Standby;
import dev.retsu.lock.internal.session.SelfFence;
import dev.retsu.lock.internal.session.ServerBounds;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * The loop's decisions without a database: the server bounds and the margin rule, the self-fencing
 * deadline on two clocks, jitter and backoff. Milliseconds each.
 */
class LoopDecisionsTest {

  private static final DataSource NO_DATABASE = new DelegatingDataSource(null);

  private static LoopSettings settings(LeaderLoopBuilder b) {
    return b.settings();
  }

  private static LeaderLoopBuilder builder() {
    return LeaderLoop.builder(NO_DATABASE, LockKey.of(1L)).candidateId("unit");
  }

  @Test
  void serverBoundIsTheSoonerOfKeepalivesAndIdleTimeout() {
    ServerBounds defaults =
        new ServerBounds(
            FailoverTiming.DEFAULT.keepaliveIdle(),
            FailoverTiming.DEFAULT.keepaliveInterval(),
            FailoverTiming.DEFAULT.keepaliveCount(),
            FailoverTiming.DEFAULT.idleSessionTimeout());
    assertThat(defaults.keepaliveBound()).isEqualTo(Duration.ofSeconds(11));
    assertThat(defaults.bound())
        .as("a paused leader is released as fast as a vanished one")
        .isEqualTo(Duration.ofSeconds(11));
    ServerBounds idleLater =
        new ServerBounds(Duration.ofSeconds(5), Duration.ofSeconds(2), 3, Duration.ofSeconds(20));
    assertThat(idleLater.bound()).isEqualTo(Duration.ofSeconds(11));
    ServerBounds idleFirst =
        new ServerBounds(Duration.ofSeconds(5), Duration.ofSeconds(2), 3, Duration.ofSeconds(4));
    assertThat(idleFirst.bound()).isEqualTo(Duration.ofSeconds(4));
    ServerBounds idleOff =
        new ServerBounds(Duration.ofSeconds(5), Duration.ofSeconds(2), 3, Duration.ZERO);
    assertThat(idleOff.bound()).isEqualTo(Duration.ofSeconds(11));
  }

  @Test
  void theSessionPinsEveryTimeoutThatCouldEndItSoonerThanTheBound() {
    ServerBounds b =
        new ServerBounds(Duration.ofSeconds(5), Duration.ofSeconds(2), 3, Duration.ofSeconds(20));
    assertThat(b.sessionSettings())
        .containsEntry("tcp_keepalives_idle", "5")
        .containsEntry("tcp_keepalives_interval", "2")
        .containsEntry("tcp_keepalives_count", "3")
        .containsEntry("tcp_user_timeout", "11000")
        .containsEntry("client_connection_check_interval", "2000")
        .containsEntry("idle_session_timeout", "20000")
        .containsEntry("idle_in_transaction_session_timeout", "20000")
        .containsEntry("transaction_timeout", "0");
  }

  @Test
  void aDeadlineWithoutTheMarginIsRefusedWithTheBoundInTheMessage() {
    assertThatThrownBy(
            () ->
                builder()
                    .timing(FailoverTiming.DEFAULT.withSelfFenceAfter(Duration.ofMillis(10_500)))
                    .build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessage(
            "selfFenceAfter must be at least PT1S shorter than the server-side bound PT11S (tcp"
                + " keepalives PT11S, idle_session_timeout PT11S), but was PT10.5S");
    assertThatThrownBy(
            () ->
                builder()
                    .timing(
                        FailoverTiming.DEFAULT
                            .withSelfFenceAfter(Duration.ofSeconds(4))
                            .withHeartbeatInterval(Duration.ofMillis(2001)))
                    .build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageStartingWith("heartbeatInterval must be at most half of selfFenceAfter (PT4S)");
  }

  @Test
  void theDeadlineMovesOnlyForwardAndExpiresOnEitherClock() {
    FakeTime time = new FakeTime();
    SelfFence fence =
        new SelfFence(time, Duration.ofSeconds(8), time.nanoTime(), time.wallMillis());
    long first = time.nanoTime();
    time.advance(Duration.ofSeconds(3));
    fence.proved(time.nanoTime());
    long later = fence.deadline();
    fence.proved(first); // an older round trip finishing late never moves it back
    assertThat(fence.deadline()).isEqualTo(later);
    time.advance(Duration.ofMillis(7_999));
    assertThat(fence.expired()).isFalse();
    time.advance(Duration.ofMillis(1));
    assertThat(fence.expired()).isTrue();

    FakeTime suspended = new FakeTime();
    SelfFence wall =
        new SelfFence(
            suspended, Duration.ofSeconds(8), suspended.nanoTime(), suspended.wallMillis());
    suspended.suspend(Duration.ofSeconds(8));
    assertThat(wall.expired()).as("the wall clock saw the suspend").isTrue();
  }

  @Test
  void standbyWaitsAreJitteredWithinTheFractionAndBackoffDoublesToTheCap() {
    LoopSettings s =
        settings(
            builder().retryInterval(Duration.ofSeconds(10)).maxBackoff(Duration.ofSeconds(50)));
    assertThat(new Standby(s, () -> 0.0, Optional::empty).jittered())
        .as("jitter never lengthens the wait: retryInterval bounds a POLL takeover")
        .isEqualTo(Duration.ofSeconds(10));
    assertThat(new Standby(s, () -> 0.5, Optional::empty).jittered())
        .isEqualTo(Duration.ofMillis(9_500));
    assertThat(new Standby(s, () -> 0.999_999, Optional::empty).jittered())
        .isBetween(Duration.ofSeconds(9), Duration.ofMillis(9_001));
    Standby standby = new Standby(s, () -> 0.5, Optional::empty);
    assertThat(List.of(1, 2, 3, 4, 5).stream().map(standby::backoff))
        .containsExactly(
            Duration.ofSeconds(10),
            Duration.ofSeconds(20),
            Duration.ofSeconds(40),
            Duration.ofSeconds(50),
            Duration.ofSeconds(50));
    assertThat(
            new Standby(settings(builder().takeover(TakeoverMode.WAIT)), () -> 0.5, Optional::empty)
                .afterHeldElsewhere())
        .as("a WAIT standby re-arms at once: the blocking wait was the wait")
        .isZero();
  }
}
