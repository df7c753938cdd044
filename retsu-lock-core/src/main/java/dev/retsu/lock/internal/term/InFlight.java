package dev.retsu.lock.internal.term;

import java.time.Duration;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A count of threads inside a step, and a bounded wait until none is: the session's end waits for
 * every thread still finishing a term (its listeners, then its release) before it releases every
 * key.
 */
final class InFlight {

  private final ReentrantLock lock = new ReentrantLock();
  private final Condition none = lock.newCondition();
  private int count;

  /** The calling thread enters the step. */
  void enter() {
    lock.lock();
    try {
      count++;
    } finally {
      lock.unlock();
    }
  }

  /** The calling thread left the step it entered. */
  void exit() {
    lock.lock();
    try {
      if (--count == 0) {
        none.signalAll();
      }
    } finally {
      lock.unlock();
    }
  }

  /**
   * Waits up to {@code timeout} until no thread is inside the step; an interrupt ends the wait
   * early and stays set.
   *
   * @return true if none is
   */
  boolean awaitNone(Duration timeout) {
    long nanos = timeout.toNanos();
    lock.lock();
    try {
      while (count > 0) {
        if (nanos <= 0) {
          return false;
        }
        nanos = none.awaitNanos(nanos);
      }
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return count == 0;
    } finally {
      lock.unlock();
    }
  }
}
