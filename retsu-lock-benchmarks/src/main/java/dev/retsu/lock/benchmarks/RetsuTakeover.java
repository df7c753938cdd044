package dev.retsu.lock.benchmarks;

import dev.retsu.lock.LeaderLoopBuilder;
import dev.retsu.lock.TakeoverMode;

/** Applies a takeover mode ("poll" or "wait") to a retsu-lock loop builder. */
final class RetsuTakeover {

  private RetsuTakeover() {}

  static void apply(LeaderLoopBuilder builder, String mode) {
    switch (mode) {
      case "poll" -> builder.takeover(TakeoverMode.POLL);
      case "wait" -> builder.takeover(TakeoverMode.WAIT);
      default -> throw new IllegalArgumentException("mode must be poll or wait, but was " + mode);
    }
  }
}
