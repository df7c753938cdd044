package dev.retsu.lock.micrometer;

import dev.retsu.lock.micrometer.internal.Texts;

/**
 * The state of one queue at collection time. Immutable and thread-safe.
 *
 * @param name the queue name, exported as the {@code queue} tag; not null, not empty
 * @param ready messages ready for delivery; not negative
 * @param inFlight messages delivered and not yet settled (leased); not negative
 * @param scheduled messages scheduled for later delivery (delayed); not negative
 * @param dead dead-lettered messages; not negative
 * @param oldestReadyAgeSeconds age of the oldest ready message in seconds, 0 when none is ready; a
 *     finite number, not negative
 */
public record QueueState(
    String name,
    long ready,
    long inFlight,
    long scheduled,
    long dead,
    double oldestReadyAgeSeconds) {

  /**
   * Validates the components.
   *
   * @param name not null, not empty
   * @param ready not negative
   * @param inFlight not negative
   * @param scheduled not negative
   * @param dead not negative
   * @param oldestReadyAgeSeconds finite, not negative
   * @throws IllegalArgumentException naming the bad value
   */
  public QueueState {
    if (name == null) {
      throw new IllegalArgumentException("queue name must not be null");
    }
    if (name.isEmpty()) {
      throw new IllegalArgumentException("queue name must not be empty");
    }
    requireNotNegative("ready", ready, name);
    requireNotNegative("inFlight", inFlight, name);
    requireNotNegative("scheduled", scheduled, name);
    requireNotNegative("dead", dead, name);
    if (!(oldestReadyAgeSeconds >= 0) || Double.isInfinite(oldestReadyAgeSeconds)) {
      throw new IllegalArgumentException(
          "oldestReadyAgeSeconds of queue "
              + Texts.quote(name)
              + " must be a finite number >= 0, but was "
              + oldestReadyAgeSeconds);
    }
  }

  /**
   * Returns every message the queue holds: ready + in flight + scheduled + dead, capped at {@link
   * Long#MAX_VALUE}. The series budget keeps the queues with the largest backlog.
   *
   * @return the backlog
   */
  public long backlog() {
    return saturatedAdd(saturatedAdd(ready, inFlight), saturatedAdd(scheduled, dead));
  }

  static long saturatedAdd(long a, long b) {
    long sum = a + b;
    // Both are non-negative here, so overflow shows as a negative sum.
    return sum < 0 ? Long.MAX_VALUE : sum;
  }

  private static void requireNotNegative(String what, long value, String queue) {
    if (value < 0) {
      throw new IllegalArgumentException(
          what + " of queue " + Texts.quote(queue) + " must not be negative, but was " + value);
    }
  }
}
