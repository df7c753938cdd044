package dev.retsu.lock.faults;

import dev.retsu.lock.LeaderLoopBuilder;
import java.time.Duration;

/**
 * Short bounds so that fault rounds take seconds: the server ends a silent leader session after 3 s
 * (keepalives 1 s + 2 × 1 s, tcp_user_timeout 3 s) or 4 s idle; the client fences at 2 s.
 */
final class FaultTiming {

  static final Duration RETRY = Duration.ofMillis(200);
  static final Duration REFRESH = Duration.ofMillis(300);
  static final Duration HEARTBEAT = Duration.ofMillis(500);
  static final Duration SELF_FENCE = Duration.ofSeconds(2);
  static final Duration IDLE_SESSION = Duration.ofSeconds(4);
  static final Duration SERVER_BOUND = Duration.ofSeconds(3);

  private FaultTiming() {}

  static LeaderLoopBuilder fast(LeaderLoopBuilder b) {
    return b.retryInterval(RETRY)
        .refreshInterval(REFRESH)
        .heartbeatInterval(HEARTBEAT)
        .selfFenceAfter(SELF_FENCE)
        .refreshTimeout(Duration.ofSeconds(1))
        .serverKeepalives(Duration.ofSeconds(1), Duration.ofSeconds(1), 2)
        .serverIdleSessionTimeout(IDLE_SESSION)
        .roundTripTimeout(Duration.ofSeconds(2))
        .maxBackoff(Duration.ofSeconds(1))
        .closeTimeout(Duration.ofSeconds(3));
  }
}
