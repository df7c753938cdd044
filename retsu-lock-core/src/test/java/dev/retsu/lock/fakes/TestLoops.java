package dev.retsu.lock.fakes;

import dev.retsu.lock.FailoverTiming;
import dev.retsu.lock.LeaderLoopBuilder;
import java.time.Duration;

/**
 * The one fast-loop preset of the tests, in-process and in the fault suite's candidate JVMs: short
 * bounds so that a term, a takeover or a fence takes seconds at most. The server ends a silent
 * leader session after 3 s (keepalives 1 s + 2 x 1 s, tcp_user_timeout 3 s) or 4 s idle; the client
 * fences at 2 s.
 */
public final class TestLoops {

  /** Standby retry interval. */
  public static final Duration RETRY = Duration.ofMillis(200);

  /** Refresh interval. */
  public static final Duration REFRESH = Duration.ofMillis(300);

  /** Heartbeat interval. */
  public static final Duration HEARTBEAT = Duration.ofMillis(500);

  /** Self-fencing deadline. */
  public static final Duration SELF_FENCE = Duration.ofSeconds(2);

  /** {@code idle_session_timeout} on the leader's session. */
  public static final Duration IDLE_SESSION = Duration.ofSeconds(4);

  /** The keepalive bound: 1 s + 2 x 1 s. */
  public static final Duration SERVER_BOUND = Duration.ofSeconds(3);

  /** The preset's failover timing. */
  public static final FailoverTiming TIMING =
      FailoverTiming.DEFAULT
          .withHeartbeatInterval(HEARTBEAT)
          .withSelfFenceAfter(SELF_FENCE)
          .withServerKeepalives(Duration.ofSeconds(1), Duration.ofSeconds(1), 2)
          .withServerIdleSessionTimeout(IDLE_SESSION)
          .withRoundTripTimeout(Duration.ofSeconds(2));

  private TestLoops() {}

  /**
   * Applies the preset.
   *
   * @param b a builder
   * @return the builder
   */
  public static LeaderLoopBuilder fast(LeaderLoopBuilder b) {
    return b.retryInterval(RETRY)
        .refreshInterval(REFRESH)
        .timing(TIMING)
        .maxBackoff(Duration.ofSeconds(1))
        .closeTimeout(Duration.ofSeconds(3));
  }
}
