package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retsu.lock.internal.session.ServerBounds;
import dev.retsu.lock.internal.term.TermOptions;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/** Options of a group: each rule and its message, without a database. */
class LeaderGroupBuilderTest {

  private final PGSimpleDataSource ds = new PGSimpleDataSource();
  private final List<LockKey> keys = List.of(LockKey.of(1L), LockKey.of(2L), LockKey.of(3L));

  @Test
  void defaults() {
    LeaderGroup g = LeaderGroup.builder(ds, "billing", keys).candidateId("w1").build();
    assertThat(g.name()).isEqualTo("billing");
    assertThat(g.candidateId()).isEqualTo("w1");
    assertThat(g.keys()).isEqualTo(keys);
    assertThat(g.state()).isEqualTo(LeaderGroup.State.NEW);
    assertThat(g.heldCount()).isZero();
    g.close();
    assertThat(g.state()).isEqualTo(LeaderGroup.State.CLOSED);
  }

  @Test
  void partitionedKeysAreNamedInTheNamespace() {
    LeaderGroup g = LeaderGroup.partitioned(ds, "tenants", 3).build();
    assertThat(g.keys())
        .containsExactly(
            LockKey.named("tenants", "0"),
            LockKey.named("tenants", "1"),
            LockKey.named("tenants", "2"));
    assertThat(g.name()).isEqualTo("tenants");
  }

  @Test
  void rulesAndTheirMessages() {
    assertThatThrownBy(() -> LeaderGroup.builder(ds, "bad name", keys))
        .hasMessageStartingWith("name must be 1 to 40 characters");
    assertThatThrownBy(() -> LeaderGroup.builder(ds, "g", List.of()))
        .hasMessage("keys must hold 1 to 100000 keys, but held 0");
    assertThatThrownBy(
            () -> LeaderGroup.builder(ds, "g", List.of(LockKey.of(1L), LockKey.of(1L))).build())
        .hasMessageStartingWith("keys must be distinct, but");
    assertThatThrownBy(() -> LeaderGroup.builder(ds, "g", keys).sessions(17))
        .hasMessage("sessions must be within 1..16, but was 17");
    assertThatThrownBy(() -> LeaderGroup.builder(ds, "g", keys).sessions(0))
        .hasMessage("sessions must be within 1..16, but was 0");
    assertThatThrownBy(
            () -> LeaderGroup.builder(ds, "g", keys).membershipInterval(Duration.ofMillis(10)))
        .hasMessage("membershipInterval must be at least PT0.05S, but was PT0.01S");
    assertThatThrownBy(
            () -> LeaderGroup.builder(ds, "g", keys).refreshTimeout(Duration.ofSeconds(8)).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageStartingWith("refreshTimeout must be shorter than selfFenceAfter (PT8S)");
    assertThatThrownBy(
            () ->
                LeaderGroup.builder(ds, "g", keys)
                    .timing(FailoverTiming.DEFAULT.withSelfFenceAfter(Duration.ofSeconds(11)))
                    .build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageStartingWith(
            "selfFenceAfter must be at least PT1S shorter than the server-side");
    assertThatThrownBy(() -> LeaderGroup.partitioned(ds, "t", 0))
        .hasMessage("partitions must be within 1..100000, but was 0");
    assertThatThrownBy(
            () -> LeaderGroup.builder(ds, "g", keys).memberWatchInterval(Duration.ofMillis(1)))
        .hasMessage("memberWatchInterval must be zero (off) or 5 ms to 10 s, but was PT0.001S");
    assertThatThrownBy(
            () -> LeaderGroup.builder(ds, "g", keys).memberWatchInterval(Duration.ofSeconds(11)))
        .hasMessage("memberWatchInterval must be zero (off) or 5 ms to 10 s, but was PT11S");
    LeaderGroupBuilder b = LeaderGroup.builder(ds, "g", keys);
    for (Duration accepted : List.of(Duration.ZERO, Duration.ofMillis(5), Duration.ofSeconds(10))) {
      assertThat(b.memberWatchInterval(accepted)).as("%s is accepted", accepted).isSameAs(b);
    }
  }

  @Test
  void fastFailoverSetsValuesThatMeetEachRuleAGroupChecks() {
    LeaderGroupBuilder b = LeaderGroup.builder(ds, "fast", keys).fastFailover();
    TermOptions t = b.termOptions("w1");
    assertThat(t.heartbeatInterval()).isEqualTo(Duration.ofMillis(500));
    assertThat(t.selfFenceAfter()).isEqualTo(Duration.ofSeconds(1));
    assertThat(t.refreshTimeout())
        .isEqualTo(LeaderGroupBuilder.FAST_REFRESH_TIMEOUT)
        .isEqualTo(Duration.ofMillis(750));
    assertThat(t.roundTripTimeout()).isEqualTo(Duration.ofSeconds(1));
    assertThat(t.bounds().bound()).isEqualTo(Duration.ofSeconds(2));
    // The rules build() checks, each met by these values:
    assertThat(t.refreshTimeout()).as("refresh below the deadline").isLessThan(t.selfFenceAfter());
    assertThat(t.heartbeatInterval().multipliedBy(2))
        .as("two heartbeats within the deadline")
        .isLessThanOrEqualTo(t.selfFenceAfter());
    assertThat(t.selfFenceAfter().plus(ServerBounds.MIN_FENCING_MARGIN))
        .as("the deadline a margin before the server's bound")
        .isLessThanOrEqualTo(t.bounds().bound());
    LeaderGroup g = b.build();
    assertThat(g.state()).isEqualTo(LeaderGroup.State.NEW);
    g.close();
  }

  @Test
  void anOptionSetAfterFastFailoverThatBreaksARuleFailsTheBuildNamingTheRule() {
    assertThatThrownBy(
            () ->
                LeaderGroup.builder(ds, "g", keys)
                    .fastFailover()
                    .refreshTimeout(Duration.ofSeconds(1))
                    .build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageStartingWith("refreshTimeout must be shorter than selfFenceAfter (PT1S)")
        .hasMessageEndingWith("but was PT1S");
    assertThatThrownBy(
            () ->
                LeaderGroup.builder(ds, "g", keys)
                    .fastFailover()
                    .timing(FailoverTiming.FAST.withHeartbeatInterval(Duration.ofMillis(600)))
                    .build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessage(
            "heartbeatInterval must be at most half of selfFenceAfter (PT1S) so that one slow"
                + " heartbeat does not fence a healthy leader, but was PT0.6S");
    assertThatThrownBy(
            () ->
                LeaderGroup.builder(ds, "g", keys)
                    .fastFailover()
                    .timing(FailoverTiming.FAST.withSelfFenceAfter(Duration.ofMillis(1500)))
                    .build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessage(
            "selfFenceAfter must be at least PT1S shorter than the server-side bound PT2S (tcp"
                + " keepalives PT2S, idle_session_timeout PT2S), but was PT1.5S");
  }

  @Test
  void aGroupStartsOnce() {
    LeaderGroup g = LeaderGroup.builder(ds, "g", keys).build();
    g.close();
    assertThatThrownBy(() -> g.start(ctx -> {}))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageStartingWith("A LeaderGroup starts once; this one is CLOSED");
  }
}
