package dev.retsu.lock.internal;

import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The lifecycle every recipe shares, moved by compare-and-set: {@code NEW -> RUNNING -> FAILED} or
 * {@code CLOSED}, and {@code NEW -> CLOSED}. The recipes show it as their own public enums ({@code
 * LeaderLoop.State}, {@code LeaderGroup.State}), which name the same four phases. Thread-safe.
 */
public final class Lifecycle {

  /** The four phases. */
  public enum Phase {
    /** Built, not running yet. */
    NEW,
    /** Running. */
    RUNNING,
    /** Stopped by a failure. */
    FAILED,
    /** Closed, or returned. */
    CLOSED
  }

  private final AtomicReference<Phase> phase = new AtomicReference<>(Phase.NEW);
  private volatile Throwable failure;

  /** The phase now. */
  public Phase phase() {
    return phase.get();
  }

  /**
   * Moves from NEW to RUNNING.
   *
   * @param what the recipe, for the message ("A LeaderLoop runs once")
   * @param context the log prefix
   * @throws IllegalStateException if it is not NEW
   */
  public void start(String what, String context) {
    if (!phase.compareAndSet(Phase.NEW, Phase.RUNNING)) {
      throw new IllegalStateException(what + "; this one is " + phase.get() + " " + context);
    }
  }

  /** Moves to FAILED with its cause. */
  public void fail(Throwable cause) {
    failure = cause;
    phase.set(Phase.FAILED);
  }

  /** Moves NEW or RUNNING to CLOSED; a FAILED one stays FAILED. */
  public void close() {
    phase.compareAndSet(Phase.NEW, Phase.CLOSED);
    phase.compareAndSet(Phase.RUNNING, Phase.CLOSED);
  }

  /** What failed it, once FAILED. */
  public Optional<Throwable> failure() {
    return Optional.ofNullable(failure);
  }
}
