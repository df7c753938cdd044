package dev.retsu.lock.benchmarks;

import dev.retsu.lock.LeaderLoop;

/** Applies a takeover mode ("poll" or "wait") to a retsu-lock loop builder. */
final class RetsuTakeover {

  private RetsuTakeover() {}

  /** Returns whether this build of retsu-lock offers the WAIT takeover mode. */
  static boolean waitAvailable() {
    return false;
  }

  static void apply(LeaderLoop.Builder builder, String mode) {
    switch (mode) {
      case "poll" -> {
        // the default
      }
      case "wait" ->
          throw new IllegalArgumentException(
              "this build of retsu-lock has no WAIT takeover mode yet, but mode was wait");
      default -> throw new IllegalArgumentException("mode must be poll or wait, but was " + mode);
    }
  }
}
