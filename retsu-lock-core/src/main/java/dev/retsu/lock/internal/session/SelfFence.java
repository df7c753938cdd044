package dev.retsu.lock.internal.session;

import dev.retsu.lock.internal.TimeSource;
import java.time.Duration;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongBinaryOperator;

/**
 * Invariant 5, client side: the self-fencing deadline of one term. It runs from the start of the
 * last round trip on the session that succeeded, moves only forward, and is checked on two clocks:
 * the monotonic one, and the wall clock, which keeps counting through a system suspend or a VM
 * freeze that stops the monotonic clock. It expires when either passes; a wall clock stepped
 * forward by NTP can only make it expire early, never late. Thread-safe.
 */
public final class SelfFence {

  /**
   * The later of two monotonic times, and the larger of two wall times: constants, linked when the
   * class initialises (a standby's warm-up does that), not at a takeover's first proof.
   */
  private static final LongBinaryOperator LATER = (old, now) -> now - old > 0 ? now : old;

  private static final LongBinaryOperator MAX = Math::max;

  private final TimeSource time;
  private final Duration window;
  private final AtomicLong proofStart;
  private final AtomicLong wallDeadline;

  public SelfFence(
      TimeSource time, Duration window, long proofStartNanos, long proofStartWallMillis) {
    this.time = time;
    this.window = window;
    this.proofStart = new AtomicLong(proofStartNanos);
    this.wallDeadline = new AtomicLong(proofStartWallMillis + window.toMillis());
  }

  /** A round trip that started at {@code startNanos} succeeded: the deadline moves forward. */
  public void proved(long startNanos) {
    long wallStart = time.wallMillis() - TimeSource.millis(time.nanoTime() - startNanos);
    proofStart.accumulateAndGet(startNanos, LATER);
    wallDeadline.accumulateAndGet(wallStart + window.toMillis(), MAX);
  }

  /** The start of the last successful round trip, on the monotonic clock. */
  public long lastProofStart() {
    return proofStart.get();
  }

  /** The deadline on the wall clock, epoch milliseconds. */
  public long wallDeadlineMillis() {
    return wallDeadline.get();
  }

  /** The self-fencing window. */
  public Duration window() {
    return window;
  }

  /** The monotonic deadline. */
  public long deadline() {
    return proofStart.get() + window.toNanos();
  }

  /**
   * Nanoseconds left before the deadline (negative once passed). The clocks are read before the
   * last proof, so a proof that lands in between can only make the answer later, never a paused
   * reader's stale proof against a fresh clock.
   */
  public long nanosLeft() {
    long nowMono = time.nanoTime();
    long nowWall = time.wallMillis();
    long mono = deadline() - nowMono;
    long wall = (wallDeadline.get() - nowWall) * 1_000_000L;
    return Math.min(mono, wall);
  }

  public boolean expired() {
    return nanosLeft() <= 0;
  }

  /** The one message for a term that ran out of proof. */
  public TimeoutException timeout(ServerBounds bounds) {
    return new TimeoutException(
        "No proof that the session is alive for "
            + window
            + "; stopped before the "
            + bounds
            + " could free the lock");
  }
}
