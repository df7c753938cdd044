package dev.retsu.lock.spring.boot;

import dev.retsu.lock.LeaderContext;
import dev.retsu.lock.Term;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The leader work of one term that runs outside the loop's own thread ({@code @LeaderOnly}
 * methods): it may start only while the term is on, and the term's end interrupts it; {@link
 * LeaderGate} then awaits it before the lock is released. Thread-safe.
 */
final class TermWork {

  private final Term term;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition idle = lock.newCondition();
  private final Set<Thread> running = new LinkedHashSet<>();

  /**
   * Threads of this term's work blocked in a yield of it: they act no more, so nobody awaits them.
   */
  private final Set<Thread> handingOver = new LinkedHashSet<>();

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
      handingOver.remove(Thread.currentThread());
      signalIfIdle();
    } finally {
      lock.unlock();
    }
  }

  /**
   * The calling thread, running this term's work, yields the term: it waits in the yield for the
   * release, so the release must not wait for it.
   */
  void handingOver(boolean on) {
    lock.lock();
    try {
      if (!running.contains(Thread.currentThread())) {
        return;
      }
      if (on) {
        handingOver.add(Thread.currentThread());
        signalIfIdle();
      } else {
        handingOver.remove(Thread.currentThread());
      }
    } finally {
      lock.unlock();
    }
  }

  /**
   * Ends the term's work: nothing new starts, and what runs (on other threads) is interrupted. The
   * caller then {@link #awaitOthers awaits} it before the lock is released, when the lock is still
   * held.
   */
  void stop() {
    lock.lock();
    try {
      ended = true;
      context = null;
      for (Thread t : running) {
        if (t != Thread.currentThread()) {
          t.interrupt();
        }
      }
    } finally {
      lock.unlock();
    }
  }

  /**
   * Waits up to {@code wait} until no work of the term runs on another thread (one that hands the
   * term over counts as stopped). An interrupt of the waiting thread does not cut the wait short:
   * the lock must not be released under running work; the flag is restored on return.
   *
   * @return the threads still running when the wait ran out (empty when all stopped)
   */
  Set<Thread> awaitOthers(Duration wait) {
    boolean interrupted = false;
    lock.lock();
    try {
      long left = wait.toNanos();
      while (!othersIdle() && left > 0) {
        try {
          left = idle.awaitNanos(left);
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
      Set<Thread> still = new LinkedHashSet<>(running);
      still.remove(Thread.currentThread());
      still.removeAll(handingOver);
      return still;
    } finally {
      lock.unlock();
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** Wakes the waiter, which looks again (whether it is idle depends on the waiter's thread). */
  private void signalIfIdle() {
    idle.signalAll();
  }

  private boolean othersIdle() {
    for (Thread t : running) {
      if (t != Thread.currentThread() && !handingOver.contains(t)) {
        return false;
      }
    }
    return true;
  }
}
