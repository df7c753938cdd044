package dev.retsu.lock.internal.term;

import dev.retsu.lock.internal.TimeSource;
import java.time.Duration;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * A wait that {@code close()} cuts short: the loop's standby waits, and the leader's waits when it
 * cannot wait on its session's socket. Thread-safe.
 */
public final class Wakeup {

  private final TimeSource time;
  private final BooleanSupplier stop;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition wake = lock.newCondition();

  /**
   * A wait that stops when {@code stop} holds.
   *
   * @param time the clock
   * @param stop whether the owner stopped
   */
  public Wakeup(TimeSource time, BooleanSupplier stop) {
    this.time = time;
    this.stop = stop;
  }

  /**
   * Waits up to {@code nanos}, or until the loop stops or {@code done} holds (checked whenever
   * {@link #wakeAll()} is called).
   *
   * @return false if the loop should stop
   */
  public boolean await(long nanos, BooleanSupplier done) {
    try {
      lock.lockInterruptibly();
      try {
        long left = nanos;
        while (left > 0 && !stop.getAsBoolean() && !done.getAsBoolean()) {
          left = time.awaitNanos(wake, left);
        }
      } finally {
        lock.unlock();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
    return !stop.getAsBoolean() && !Thread.currentThread().isInterrupted();
  }

  /**
   * Waits {@code d} on standby (zero: not at all).
   *
   * @return false if the loop should stop
   */
  public boolean pause(Duration d) {
    if (d.isZero()) {
      return !stop.getAsBoolean() && !Thread.currentThread().isInterrupted();
    }
    return await(d.toNanos(), () -> false);
  }

  /** Wakes every wait, so each reads its conditions again. */
  public void wakeAll() {
    lock.lock();
    try {
      wake.signalAll();
    } finally {
      lock.unlock();
    }
  }
}
