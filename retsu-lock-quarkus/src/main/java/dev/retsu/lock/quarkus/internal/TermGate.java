package dev.retsu.lock.quarkus.internal;

import dev.retsu.lock.LeaderContext;
import dev.retsu.lock.LeadershipLostException;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import dev.retsu.lock.quarkus.LeaderWork;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The leader-only gate of one leader: work starts only while a term is on and its first refresh has
 * handed over the context; it runs with that context bound to its thread; and the end of the term
 * interrupts it and, when the lock is still the term's to release, waits for it before the release.
 * Thread-safe.
 */
public final class TermGate {

  private static final Logger LOG = LoggerFactory.getLogger(TermGate.class);

  private final String prefix;
  private final Duration closeTimeout;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition idle = lock.newCondition();
  private final Set<Thread> running = new LinkedHashSet<>();
  private final ThreadLocal<LeaderContext> bound = new ThreadLocal<>();
  private Term term;
  private LeaderContext context;

  /**
   * A gate.
   *
   * @param prefix for logs, such as {@code [leader=report]}
   * @param closeTimeout how long a graceful end waits for running work
   */
  public TermGate(String prefix, Duration closeTimeout) {
    this.prefix = prefix;
    this.closeTimeout = closeTimeout;
  }

  /**
   * A term started; work may start once its context is {@link #bind bound}.
   *
   * @param started the term
   */
  public void begin(Term started) {
    lock.lock();
    try {
      term = started;
      context = null;
    } finally {
      lock.unlock();
    }
  }

  /**
   * The loop handed the term's context to a refresh: from now on work runs.
   *
   * @param ctx the context
   */
  public void bind(LeaderContext ctx) {
    lock.lock();
    try {
      if (term != null && term.equals(ctx.term())) {
        context = ctx;
      }
    } finally {
      lock.unlock();
    }
  }

  /**
   * The context of the term whose work runs on the calling thread.
   *
   * @return the context, or null outside such work
   */
  public LeaderContext current() {
    return bound.get();
  }

  /**
   * Runs the work if a term is on, with its context bound to this thread.
   *
   * @param work the work
   * @return whether it ran
   * @throws Exception what the work threw
   */
  public boolean run(LeaderWork work) throws Exception {
    LeaderContext nested = bound.get();
    if (nested != null) {
      nested.ensureLeader(); // work of this term calling more of it, on the same thread
      work.run(nested);
      return true;
    }
    LeaderContext ctx;
    Thread self = Thread.currentThread();
    lock.lock();
    try {
      ctx = context;
      if (ctx == null || !ctx.isLeader()) {
        return false;
      }
      running.add(self);
    } finally {
      lock.unlock();
    }
    try {
      try {
        ctx.ensureLeader();
      } catch (LeadershipLostException e) {
        LOG.debug("{} The term ended; skipped leader-only work: {}", prefix, e.getMessage());
        return false;
      }
      bound.set(ctx);
      try {
        work.run(ctx);
      } finally {
        bound.remove();
      }
      return true;
    } finally {
      lock.lock();
      try {
        running.remove(self);
        idle.signalAll();
      } finally {
        lock.unlock();
      }
    }
  }

  /**
   * The term ended (the loop's {@code onLost}, before the lock is released): nothing new starts and
   * running work is interrupted. When the lock is still the term's to release (a stop, a yield, a
   * failed refresh) the work is awaited first, up to the close timeout, since the release lets a
   * successor start; then an ERROR names the threads and the lock goes anyway. Other reasons do not
   * wait: the lock may be gone already, or must be released at once.
   *
   * @param ended the term
   * @param reason why
   */
  public void end(Term ended, LossReason reason) {
    boolean interrupted = false;
    Thread self = Thread.currentThread();
    lock.lock();
    try {
      if (term == null || !term.equals(ended)) {
        return;
      }
      term = null;
      context = null;
      for (Thread t : running) {
        if (t != self) {
          t.interrupt();
        }
      }
      if (!holdsLock(reason)) {
        return;
      }
      long left = closeTimeout.toNanos();
      while (othersRunning(self) && left > 0) {
        try {
          left = idle.awaitNanos(left);
        } catch (InterruptedException e) {
          interrupted = true; // the lock must not go under running work: wait on
        }
      }
      if (othersRunning(self)) {
        LOG.error(
            "{} Leader-only work on thread(s) {} ignored the interrupt for close-timeout {} after"
                + " the term ended ({}); releasing the lock anyway: make it stop when interrupted",
            prefix,
            names(self),
            closeTimeout,
            reason);
      }
    } finally {
      lock.unlock();
      if (interrupted) {
        self.interrupt();
      }
    }
  }

  /**
   * Whether a term that ended for this reason still holds its lock, and so releases it itself.
   *
   * @param reason why the term ended
   * @return true for a stop, a yield and a failed refresh
   */
  static boolean holdsLock(LossReason reason) {
    return reason == LossReason.CLOSED
        || reason == LossReason.YIELDED
        || reason == LossReason.REFRESH_FAILED;
  }

  private boolean othersRunning(Thread self) {
    for (Thread t : running) {
      if (t != self) {
        return true;
      }
    }
    return false;
  }

  private String names(Thread self) {
    StringBuilder b = new StringBuilder();
    for (Thread t : running) {
      if (t != self) {
        b.append(b.length() == 0 ? "" : ", ").append(t.getName());
      }
    }
    return b.toString();
  }
}
