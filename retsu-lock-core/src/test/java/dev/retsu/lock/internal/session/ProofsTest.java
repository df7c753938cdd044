package dev.retsu.lock.internal.session;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.fakes.FakeTime;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The heartbeat's schedule on one session, on simulated time (no database). */
class ProofsTest {

  private static final Duration HEARTBEAT = Duration.ofMillis(500);

  private final FakeTime time = new FakeTime();
  private final long start = time.nanoTime();
  private final Proofs proofs =
      new Proofs(time, HEARTBEAT, Duration.ofSeconds(2), start, time.wallMillis());

  /**
   * Round trips that prove only liveness (a library statement at every refresh, more often than the
   * heartbeat) never postpone the pid and marker check: it stays due one interval after the last
   * ownership proof. Scheduling the heartbeat from the last liveness proof instead let a leader
   * behind a transaction-mode pooler, refreshing every 300 ms with a 500 ms heartbeat, run on
   * another client's backend for a minute without one check.
   */
  @Test
  void livenessRoundTripsNeverPostponeTheOwnershipHeartbeat() {
    for (int i = 0; i < 10; i++) {
      time.advance(Duration.ofMillis(300));
      proofs.alive(time.nanoTime());
    }
    assertThat(proofs.nextHeartbeat()).isEqualTo(start + HEARTBEAT.toNanos());
    assertThat(proofs.fence().lastProofStart()).isEqualTo(time.nanoTime());

    long proved = time.nanoTime();
    proofs.owned(proved, false);
    assertThat(proofs.nextHeartbeat()).isEqualTo(proved + HEARTBEAT.toNanos());
  }

  /** A touched session's proof is due one interval after the last ownership proof, not before. */
  @Test
  void aTouchedSessionsOwnershipProofIsDueOneIntervalAfterTheLastOne() {
    proofs.touched();
    time.advance(HEARTBEAT.minusMillis(1));
    assertThat(proofs.ownershipDue()).isFalse();
    time.advance(Duration.ofMillis(1));
    assertThat(proofs.ownershipDue()).isTrue();
    assertThat(proofs.needsFullProof()).isTrue();
  }
}
