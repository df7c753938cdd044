package dev.retsu.lock.micrometer.internal;

/**
 * The values one queue series reads: written by the recording thread, read by scrapes. Each field
 * is volatile so a scrape sees a value that was recorded, though it may mix two consecutive
 * snapshots of the same queue (gauges are point samples; that is acceptable). Thread-safe.
 */
public final class QueueCell {

  private volatile double ready;
  private volatile double inFlight;
  private volatile double scheduled;
  private volatile double dead;
  private volatile double oldestReadyAgeSeconds;

  /** Creates a cell of zeros. */
  public QueueCell() {}

  /**
   * Replaces the values.
   *
   * @param ready messages ready
   * @param inFlight messages in flight
   * @param scheduled messages scheduled
   * @param dead messages dead-lettered
   * @param oldestReadyAgeSeconds age of the oldest ready message
   */
  public void set(
      double ready, double inFlight, double scheduled, double dead, double oldestReadyAgeSeconds) {
    this.ready = ready;
    this.inFlight = inFlight;
    this.scheduled = scheduled;
    this.dead = dead;
    this.oldestReadyAgeSeconds = oldestReadyAgeSeconds;
  }

  /**
   * Returns the ready count.
   *
   * @return messages ready
   */
  public double ready() {
    return ready;
  }

  /**
   * Returns the in-flight count.
   *
   * @return messages in flight
   */
  public double inFlight() {
    return inFlight;
  }

  /**
   * Returns the scheduled count.
   *
   * @return messages scheduled
   */
  public double scheduled() {
    return scheduled;
  }

  /**
   * Returns the dead-lettered count.
   *
   * @return messages dead-lettered
   */
  public double dead() {
    return dead;
  }

  /**
   * Returns the age of the oldest ready message.
   *
   * @return seconds
   */
  public double oldestReadyAgeSeconds() {
    return oldestReadyAgeSeconds;
  }
}
