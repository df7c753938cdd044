package dev.retsu.lock;

import java.time.Duration;
import java.util.List;

/**
 * The validated, immutable settings of one loop, made by {@link LeaderLoopBuilder#build()}. Single
 * values are checked as they are set on the builder; the rules that tie two values together are
 * checked here, once. Thread-safe.
 */
record LoopSettings(
    AdvisoryLock lock,
    Duration retryInterval,
    Duration refreshInterval,
    double retryJitter,
    FailurePolicy failurePolicy,
    Duration refreshTimeout,
    Duration heartbeatInterval,
    Duration selfFenceAfter,
    ServerBounds bounds,
    Duration maxBackoff,
    Duration closeTimeout,
    TakeoverMode takeover,
    Duration waitTimeout,
    boolean failFast,
    List<LeaderListener> listeners,
    TimeSource time) {

  LoopSettings {
    listeners = List.copyOf(listeners);
    bounds.checkDeadline(selfFenceAfter);
    if (heartbeatInterval.multipliedBy(2).compareTo(selfFenceAfter) > 0) {
      throw new IllegalStateException(
          "heartbeatInterval must be at most half of selfFenceAfter ("
              + selfFenceAfter
              + ") so that one slow heartbeat does not fence a healthy leader, but was "
              + heartbeatInterval);
    }
  }

  String context() {
    return lock.context();
  }

  /** The settings a loop logs when it starts. */
  String summary() {
    return "takeover "
        + takeover
        + ", retry "
        + retryInterval
        + ", refresh "
        + refreshInterval
        + ", policy "
        + failurePolicy
        + ", "
        + bounds;
  }
}
