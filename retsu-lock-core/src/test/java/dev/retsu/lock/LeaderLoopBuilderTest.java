package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retsu.lock.internal.loop.LoopSettings;
import dev.retsu.lock.internal.session.ServerBounds;
import dev.retsu.lock.internal.term.TermOptions;
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
    TermOptions o = b.settings().term();
    assertThat(o.selfFenceAfter())
        .as("2 s under the bound of 8 s")
        .isEqualTo(Duration.ofSeconds(6));
    assertThat(o.bounds().bound()).isEqualTo(Duration.ofSeconds(8));
  }

  @Test
  void fastFailoverSetsValuesThatMeetEachRuleALoopChecks() {
    LoopSettings s = b.fastFailover().settings();
    TermOptions t = s.term();
    assertThat(s.retryInterval())
        .isEqualTo(LeaderLoopBuilder.FAST_RETRY_INTERVAL)
        .isEqualTo(Duration.ofMillis(500));
    assertThat(t.heartbeatInterval()).isEqualTo(FailoverTiming.FAST.heartbeatInterval());
    assertThat(t.selfFenceAfter()).isEqualTo(FailoverTiming.FAST.selfFenceAfter());
    assertThat(t.roundTripTimeout()).isEqualTo(Duration.ofSeconds(1));
    assertThat(t.bounds().bound()).isEqualTo(Duration.ofSeconds(2));
    assertThat(s.spec().settings())
        .containsEntry("tcp_keepalives_idle", "1")
        .containsEntry("tcp_keepalives_interval", "1")
        .containsEntry("tcp_keepalives_count", "1")
        .containsEntry("tcp_user_timeout", "2000")
        .containsEntry("idle_session_timeout", "2000");
    // The rules build() checks, each met by these values:
    assertThat(t.heartbeatInterval().multipliedBy(2))
        .as("two heartbeats within the deadline")
        .isLessThanOrEqualTo(t.selfFenceAfter());
    assertThat(t.selfFenceAfter().plus(ServerBounds.MIN_FENCING_MARGIN))
        .as("the deadline a margin before the server's bound")
        .isLessThanOrEqualTo(t.bounds().bound());
  }

  @Test
  void anOptionSetAfterFastFailoverOverridesItAndABrokenRuleFailsTheBuildNamingIt() {
    assertThat(b.fastFailover().retryInterval(Duration.ofSeconds(2)).settings().retryInterval())
        .isEqualTo(Duration.ofSeconds(2));
    b.timing(FailoverTiming.FAST.withHeartbeatInterval(Duration.ofMillis(600)));
    assertThatThrownBy(b::build)
        .isInstanceOf(IllegalStateException.class)
        .hasMessage(
            "heartbeatInterval must be at most half of selfFenceAfter (PT1S) so that one slow"
                + " heartbeat does not fence a healthy leader, but was PT0.6S");
    b.timing(FailoverTiming.FAST.withSelfFenceAfter(Duration.ofMillis(1500)));
    assertThatThrownBy(b::build)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageStartingWith(
            "selfFenceAfter must be at least PT1S shorter than the server-side bound PT2S");
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
