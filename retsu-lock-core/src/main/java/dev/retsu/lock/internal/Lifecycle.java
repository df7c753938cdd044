package dev.retsu.lock.internal;

import java.util.Optional;
import java.util.concurrent.CompletableFuture;
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

  /** Completes when the phase becomes CLOSED, exceptionally when it becomes FAILED. */
  private final CompletableFuture<Void> ended = new CompletableFuture<>();

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
    ended.completeExceptionally(cause);
  }

  /** Moves NEW or RUNNING to CLOSED; a FAILED one stays FAILED. */
  public void close() {
    phase.compareAndSet(Phase.NEW, Phase.CLOSED);
    phase.compareAndSet(Phase.RUNNING, Phase.CLOSED);
    if (phase.get() == Phase.CLOSED) {
      ended.complete(null);
    }
  }

  /**
   * A future of the end: completes when the phase becomes CLOSED, exceptionally with the cause when
   * it becomes FAILED. Each call returns a new copy, so a caller that completes its own copy
   * changes nothing here.
   *
   * @return the future
   */
  public CompletableFuture<Void> ended() {
    return ended.copy();
  }

  /** What failed it, once FAILED. */
  public Optional<Throwable> failure() {
    return Optional.ofNullable(failure);
  }
}
