package dev.retsu.lock;

import java.time.Duration;

/**
 * The one fast-loop preset of the tests: short bounds so that a term, a takeover or a fence takes
 * well under a second. The server ends a silent leader session after 3 s (keepalives 1 s + 2 x 1 s,
 * tcp_user_timeout 3 s) or 4 s idle; the client fences at 2 s.
 */
final class TestLoops {

  static final Duration RETRY = Duration.ofMillis(100);
  static final Duration REFRESH = Duration.ofMillis(200);
  static final Duration HEARTBEAT = Duration.ofMillis(250);
  static final Duration SELF_FENCE = Duration.ofSeconds(2);
  static final Duration IDLE_SESSION = Duration.ofSeconds(4);

  private TestLoops() {}

  static LeaderLoopBuilder fast(LeaderLoopBuilder b) {
    return b.retryInterval(RETRY)
        .refreshInterval(REFRESH)
        .heartbeatInterval(HEARTBEAT)
        .selfFenceAfter(SELF_FENCE)
        .serverKeepalives(Duration.ofSeconds(1), Duration.ofSeconds(1), 2)
        .serverIdleSessionTimeout(IDLE_SESSION)
        .roundTripTimeout(Duration.ofSeconds(2))
        .maxBackoff(Duration.ofSeconds(1))
        .closeTimeout(Duration.ofSeconds(3));
  }
}
