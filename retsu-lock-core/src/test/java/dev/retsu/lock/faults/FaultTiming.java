package dev.retsu.lock.faults;

import dev.retsu.lock.LeaderLoopBuilder;
import dev.retsu.lock.TestLoops;
import java.time.Duration;

/** The fault suite's variant of {@link TestLoops}: a hung refresh is cut off after 1 s. */
final class FaultTiming {

  static final Duration IDLE_SESSION = TestLoops.IDLE_SESSION;

  /** A hung refresh is cut off after this long. */
  static final Duration REFRESH_TIMEOUT = Duration.ofSeconds(1);

  private FaultTiming() {}

  static LeaderLoopBuilder fast(LeaderLoopBuilder b) {
    return TestLoops.fast(b).refreshTimeout(REFRESH_TIMEOUT);
  }
}
