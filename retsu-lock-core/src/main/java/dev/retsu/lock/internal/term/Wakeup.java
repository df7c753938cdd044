package dev.retsu.lock;

import java.time.Duration;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * A wait that {@code close()} cuts short: the loop's standby waits, and the leader's waits when it
 * cannot wait on its session's socket. Thread-safe.
 */
final class Wakeup {

  private final TimeSource time;
  private final BooleanSupplier stop;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition wake = lock.newCondition();

  Wakeup(TimeSource time, BooleanSupplier stop) {
    this.time = time;
    this.stop = stop;
  }

  /**
   * Waits up to {@code nanos}, or until the loop stops or {@code done} holds (checked whenever
   * {@link #wakeAll()} is called).
   *
   * @return false if the loop should stop
   */
  boolean await(long nanos, BooleanSupplier done) {
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
  boolean pause(Duration d) {
    if (d.isZero()) {
      return !stop.getAsBoolean() && !Thread.currentThread().isInterrupted();
    }
    return await(d.toNanos(), () -> false);
  }

  void wakeAll() {
    lock.lock();
    try {
      wake.signalAll();
    } finally {
      lock.unlock();
    }
  }
}
