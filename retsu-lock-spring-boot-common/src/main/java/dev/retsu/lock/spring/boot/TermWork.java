package dev.retsu.lock.spring.boot;

import dev.retsu.lock.LeaderContext;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The leader work of one term that runs outside the loop's own thread ({@code @LeaderOnly}
 * methods): it may start only while the term is on, and the term's end interrupts it and, for a
 * graceful end, waits for it before the lock is released. Thread-safe.
 */
final class TermWork {

  private final Term term;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition idle = lock.newCondition();
  private final Set<Thread> running = new LinkedHashSet<>();
  private volatile LeaderContext context;
  private boolean ended;

  TermWork(Term term) {
    this.term = term;
  }

  Term term() {
    return term;
  }

  /** The term's context, once the loop has handed it to the first refresh; else null. */
  LeaderContext context() {
    return context;
  }

  void bind(LeaderContext context) {
    this.context = context;
  }

  /** Registers the calling thread as running work; false once the term has ended. */
  boolean enter() {
    lock.lock();
    try {
      if (ended) {
        return false;
      }
      running.add(Thread.currentThread());
      return true;
    } finally {
      lock.unlock();
    }
  }

  void leave() {
    lock.lock();
    try {
      running.remove(Thread.currentThread());
      if (running.isEmpty()) {
        idle.signalAll();
      }
    } finally {
      lock.unlock();
    }
  }

  /**
   * Ends the term's work: nothing new starts, what runs is interrupted, and for a graceful end (the
   * lock is still held: {@code CLOSED}, {@code REFRESH_FAILED}) it is awaited up to {@code wait}.
   * Other reasons do not wait: the lock may be gone already, or (self-fencing) must be released at
   * once.
   *
   * @return the threads still running when it gave up waiting (empty when all stopped)
   */
  Set<Thread> end(LossReason reason, Duration wait) {
    lock.lock();
    try {
      ended = true;
      context = null;
      for (Thread t : running) {
        if (t != Thread.currentThread()) {
          t.interrupt();
        }
      }
      boolean graceful = reason == LossReason.CLOSED || reason == LossReason.REFRESH_FAILED;
      if (graceful) {
        long left = wait.toNanos();
        while (!othersIdle() && left > 0) {
          try {
            left = idle.awaitNanos(left);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            break;
          }
        }
      }
      Set<Thread> still = new LinkedHashSet<>(running);
      still.remove(Thread.currentThread());
      return still;
    } finally {
      lock.unlock();
    }
  }

  private boolean othersIdle() {
    return running.isEmpty() || (running.size() == 1 && running.contains(Thread.currentThread()));
  }

  /** For tests: waits until no work runs. */
  boolean awaitIdle(long timeout, TimeUnit unit) throws InterruptedException {
    lock.lock();
    try {
      long left = unit.toNanos(timeout);
      while (!running.isEmpty() && left > 0) {
        left = idle.awaitNanos(left);
      }
      return running.isEmpty();
    } finally {
      lock.unlock();
    }
  }
}
