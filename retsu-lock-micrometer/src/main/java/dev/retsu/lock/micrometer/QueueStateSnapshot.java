package dev.retsu.lock.micrometer;

import dev.retsu.lock.micrometer.internal.Texts;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * What one leader refresh collected: the state of every queue, and how long collecting took. Hand
 * it to {@link QueueStateMetrics#record(QueueStateSnapshot)}.
 *
 * <p>A snapshot is validated when it is built: counts must not be negative, ages must be finite and
 * not negative, queue names must be present, not empty and unique. A bad snapshot is never built,
 * so the gauges keep exporting the previous one. Immutable and thread-safe; the builder is not
 * thread-safe.
 *
 * <pre>{@code
 * QueueStateSnapshot snapshot =
 *     QueueStateSnapshot.builder()
 *         .queue("orders", 12, 3, 0, 1, 4.5)
 *         .collectionDuration(Duration.ofMillis(40))
 *         .build();
 * }</pre>
 */
public final class QueueStateSnapshot {

  private final List<QueueState> queues;
  private final Duration collectionDuration;

  private QueueStateSnapshot(List<QueueState> queues, Duration collectionDuration) {
    this.queues = queues;
    this.collectionDuration = collectionDuration;
  }

  /**
   * Returns a snapshot of the given queues.
   *
   * @param queues the queues, each name once; copied
   * @param collectionDuration how long collecting took; not negative
   * @return the snapshot
   * @throws NullPointerException if an argument or an element is null
   * @throws IllegalArgumentException for a duplicate queue name or a negative duration
   */
  public static QueueStateSnapshot of(Collection<QueueState> queues, Duration collectionDuration) {
    Objects.requireNonNull(queues, "queues");
    Objects.requireNonNull(collectionDuration, "collectionDuration");
    if (collectionDuration.isNegative()) {
      throw new IllegalArgumentException(
          "collectionDuration must not be negative, but was " + collectionDuration);
    }
    List<QueueState> copy = new ArrayList<>(queues.size());
    Set<String> names = new HashSet<>(queues.size() * 2);
    int index = 0;
    for (QueueState q : queues) {
      if (q == null) {
        throw new NullPointerException("queues[" + index + "]");
      }
      if (!names.add(q.name())) {
        throw new IllegalArgumentException(
            "queue names must be unique, but " + Texts.quote(q.name()) + " appears twice");
      }
      copy.add(q);
      index++;
    }
    return new QueueStateSnapshot(Collections.unmodifiableList(copy), collectionDuration);
  }

  /**
   * Returns a builder for a snapshot.
   *
   * @return a new builder, with no queues and a collection duration of zero
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Returns the queues, in the order given.
   *
   * @return an unmodifiable list
   */
  public List<QueueState> queues() {
    return queues;
  }

  /**
   * Returns how long collecting took.
   *
   * @return the duration, not negative
   */
  public Duration collectionDuration() {
    return collectionDuration;
  }

  /**
   * Shows the number of queues and the duration.
   *
   * @return the snapshot for people
   */
  @Override
  public String toString() {
    return "QueueStateSnapshot[queues="
        + queues.size()
        + ", collectionDuration="
        + collectionDuration
        + "]";
  }

  /** Collects queues for a {@link QueueStateSnapshot}. Not thread-safe. */
  public static final class Builder {

    private final List<QueueState> queues = new ArrayList<>();
    private Duration collectionDuration = Duration.ZERO;

    private Builder() {}

    /**
     * Adds a queue.
     *
     * @param name the queue name
     * @param ready messages ready
     * @param inFlight messages in flight
     * @param scheduled messages scheduled
     * @param dead messages dead-lettered
     * @param oldestReadyAgeSeconds age of the oldest ready message in seconds
     * @return this builder
     * @throws IllegalArgumentException for a bad value, see {@link QueueState}
     */
    public Builder queue(
        String name,
        long ready,
        long inFlight,
        long scheduled,
        long dead,
        double oldestReadyAgeSeconds) {
      return queue(new QueueState(name, ready, inFlight, scheduled, dead, oldestReadyAgeSeconds));
    }

    /**
     * Adds a queue.
     *
     * @param queue the queue
     * @return this builder
     */
    public Builder queue(QueueState queue) {
      queues.add(Objects.requireNonNull(queue, "queue"));
      return this;
    }

    /**
     * Sets how long collecting took. Defaults to zero.
     *
     * @param collectionDuration not negative
     * @return this builder
     */
    public Builder collectionDuration(Duration collectionDuration) {
      this.collectionDuration = Objects.requireNonNull(collectionDuration, "collectionDuration");
      return this;
    }

    /**
     * Builds the snapshot.
     *
     * @return the snapshot
     * @throws IllegalArgumentException for a duplicate queue name or a negative duration
     */
    public QueueStateSnapshot build() {
      return of(queues, collectionDuration);
    }
  }
}
