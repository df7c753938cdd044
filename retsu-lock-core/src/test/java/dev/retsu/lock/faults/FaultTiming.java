package dev.retsu.lock.faults;

import dev.retsu.lock.FailoverTiming;
import dev.retsu.lock.LeaderGroupBuilder;
import dev.retsu.lock.LeaderLoopBuilder;
import dev.retsu.lock.fakes.TestLoops;
import java.time.Duration;

/**
 * The fault suite's bounds: the variant of {@link TestLoops} for loops (a hung refresh is cut off
 * after 1 s), and one preset for group members, in this JVM and in their own.
 */
final class FaultTiming {

  static final Duration IDLE_SESSION = TestLoops.IDLE_SESSION;

  /** A hung refresh is cut off after this long. */
  static final Duration REFRESH_TIMEOUT = Duration.ofSeconds(1);

  /** A group member's heartbeat interval (see {@link #fast(LeaderGroupBuilder)}). */
  static final Duration GROUP_HEARTBEAT = Duration.ofMillis(500);

  private FaultTiming() {}

  static LeaderLoopBuilder fast(LeaderLoopBuilder b) {
    return TestLoops.fast(b).refreshTimeout(REFRESH_TIMEOUT);
  }

  /**
   * A group member's short bounds: membership read every 250 ms, a key's refresh every 100 ms (cut
   * off after 2 s), heartbeats every 500 ms; a session self-fences after 3 s, the server frees a
   * silent one after 4 s (keepalives 2 s + 2 x 1 s).
   */
  static LeaderGroupBuilder fast(LeaderGroupBuilder b) {
    return b.membershipInterval(Duration.ofMillis(250))
        .refreshInterval(Duration.ofMillis(100))
        .refreshTimeout(Duration.ofSeconds(2))
        .timing(
            FailoverTiming.DEFAULT
                .withHeartbeatInterval(GROUP_HEARTBEAT)
                .withSelfFenceAfter(Duration.ofSeconds(3))
                .withServerKeepalives(Duration.ofSeconds(2), Duration.ofSeconds(1), 2)
                .withRoundTripTimeout(Duration.ofSeconds(2)))
        .reconnectInterval(Duration.ofMillis(200));
  }
}
