package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/** Builder validation: no database needed, none touched. */
class LeaderLoopBuilderTest {

  private final LeaderLoopBuilder b = LeaderLoop.builder(new PGSimpleDataSource(), LockKey.of(1L));

  @Test
  void defaultsStepDownInsteadOfLeavingAZombieAndBuild() {
    assertThat(LeaderLoopBuilder.DEFAULT_RETRY_INTERVAL).isEqualTo(Duration.ofSeconds(15));
    assertThat(LeaderLoopBuilder.DEFAULT_REFRESH_INTERVAL).isEqualTo(Duration.ofSeconds(15));
    assertThat(LeaderLoopBuilder.DEFAULT_FAILURE_POLICY).isEqualTo(FailurePolicy.STEP_DOWN);
    LeaderLoop loop = b.build();
    assertThat(loop.state()).isEqualTo(LeaderLoop.State.NEW);
    assertThat(loop.isLeader()).isFalse();
    assertThat(loop.currentTerm()).isEmpty();
    loop.close();
    assertThat(loop.state()).isEqualTo(LeaderLoop.State.CLOSED);
  }

  @Test
  void theLogPrefixNamesTheKeyAndTheCandidateAsEveryLogLineOfTheLoopDoes() {
    LeaderLoop loop =
        LeaderLoop.builder(new PGSimpleDataSource(), LockKey.named("billing", "invoice-run"))
            .candidateId("worker-1")
            .build();
    assertThat(loop.logPrefix())
        .matches("\\[lock=billing:invoice-run 0x[0-9a-f]{16} \\(-?[0-9]+\\), candidate=worker-1]");
    assertThat(loop.toString()).isEqualTo("LeaderLoop" + loop.logPrefix() + "{NEW}");
  }

  @Test
  void rejectsNullsNamingTheParameter() {
    assertThatThrownBy(() -> LeaderLoop.builder(null, LockKey.of(1L)))
        .isInstanceOf(NullPointerException.class)
        .hasMessage("dataSource");
    assertThatThrownBy(() -> b.retryInterval(null)).hasMessage("retryInterval");
    assertThatThrownBy(() -> b.listener(null)).hasMessage("listener");
    assertThatThrownBy(() -> b.failurePolicy(null)).hasMessage("failurePolicy");
    assertThatThrownBy(() -> b.build().run(null)).hasMessage("task");
  }

  @Test
  void rejectsBadDurationsWithTheValue() {
    assertThatThrownBy(() -> b.retryInterval(Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("retryInterval must be positive, but was PT-1S");
    assertThatThrownBy(() -> b.refreshInterval(Duration.ZERO))
        .hasMessage("refreshInterval must be positive, but was PT0S");
    assertThatThrownBy(() -> b.refreshTimeout(Duration.ofDays(9999)))
        .hasMessage("refreshTimeout must be at most PT576H, but was PT239976H");
    assertThatThrownBy(() -> b.retryJitter(1.0))
        .hasMessage("retryJitter must be within [0, 1), but was 1.0");
    assertThatThrownBy(() -> b.retryJitter(Double.NaN))
        .hasMessage("retryJitter must be within [0, 1), but was NaN");
    assertThatThrownBy(
            () ->
                b.timing(
                    FailoverTiming.DEFAULT.withServerKeepalives(
                        Duration.ofMillis(1500), Duration.ofSeconds(1), 3)))
        .hasMessage("keepaliveIdle must be whole seconds within 1..3600, but was PT1.5S");
    assertThatThrownBy(
            () ->
                b.timing(
                    FailoverTiming.DEFAULT.withServerKeepalives(
                        Duration.ofSeconds(1), Duration.ofSeconds(1), 0)))
        .hasMessage("keepaliveCount must be within 1..1000, but was 0");
    assertThatThrownBy(
            () ->
                b.timing(
                    FailoverTiming.DEFAULT.withServerIdleSessionTimeout(Duration.ofMillis(10))))
        .hasMessage("idleSessionTimeout must be zero (off) or at least PT1S, but was PT0.01S");
  }

  @Test
  void rejectsASelfFencingDeadlineNotShorterThanTheServerBound() {
    FailoverTiming t =
        FailoverTiming.DEFAULT.withServerKeepalives(
            Duration.ofSeconds(5), Duration.ofSeconds(2), 3); // 11 s
    b.timing(t.withSelfFenceAfter(Duration.ofMillis(10_500)));
    assertThatThrownBy(b::build)
        .isInstanceOf(IllegalStateException.class)
        .hasMessage(
            "selfFenceAfter must be at least PT1S shorter than the server-side bound PT11S (tcp"
                + " keepalives PT11S, idle_session_timeout PT11S), but was PT10.5S");
    t = t.withServerIdleSessionTimeout(Duration.ofSeconds(8));
    b.timing(t.withSelfFenceAfter(Duration.ofSeconds(8)));
    assertThatThrownBy(b::build).hasMessageContaining("server-side bound PT8S");
    b.timing(t.withSelfFenceAfter(Duration.ofSeconds(6)));
    assertThatCode(b::build).as("2 s under the bound of 8 s").doesNotThrowAnyException();
  }

  @Test
  void rejectsAHeartbeatTooSlowForTheDeadline() {
    b.timing(FailoverTiming.DEFAULT.withHeartbeatInterval(Duration.ofSeconds(5)));
    assertThatThrownBy(b::build)
        .isInstanceOf(IllegalStateException.class)
        .hasMessage(
            "heartbeatInterval must be at most half of selfFenceAfter (PT8S) so that one slow"
                + " heartbeat does not fence a healthy leader, but was PT5S");
  }

  @Test
  void runsOnlyOnce() {
    LeaderLoop loop = b.build();
    loop.close();
    assertThatThrownBy(() -> loop.run(ctx -> {}))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageStartingWith("A LeaderLoop runs once; this one is CLOSED");
  }
}
