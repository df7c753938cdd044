package dev.retsu.lock.spring.boot;

import dev.retsu.lock.LeaderContext;
import dev.retsu.lock.LeaderTask;
import dev.retsu.lock.LeadershipLostException;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import java.time.Duration;
import java.util.Set;
import org.aopalliance.intercept.MethodInvocation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code @LeaderOnly} gate of one leadership (a named leader, or one key of a group): leader
 * work may start only while the term is on and its context has been handed to the first refresh; it
 * runs with the term bound to its thread; and the term's end interrupts it and, for a graceful end,
 * awaits it before the lock is released. Every way of leading (the loop, a test mode, a group key)
 * drives the same gate, so the rule has one home. Thread-safe.
 */
final class LeaderGate {

  private static final Logger LOG = LoggerFactory.getLogger(LeaderGate.class);

  private final Object owner;
  private final String name;
  private final Duration closeTimeout;
  private volatile TermWork work;

  /**
   * @param owner whose {@link LeaderDataSource} finds the bound term
   * @param name for logs: {@code leader=x} or {@code group=g, key=k}
   * @param closeTimeout how long a graceful end waits for running work
   */
  LeaderGate(Object owner, String name, Duration closeTimeout) {
    this.owner = owner;
    this.name = name;
    this.closeTimeout = closeTimeout;
  }

  /** A term started (core's {@code onAcquired}): work may start once it is bound. */
  void begin(Term term) {
    work = new TermWork(term);
  }

  /** The context of the running term once bound, else null. */
  LeaderContext context() {
    TermWork w = work;
    return w == null ? null : w.context();
  }

  /** Binds a context by hand (the test mode, which has no refresh to hand it over). */
  void bind(LeaderContext context) {
    TermWork w = work;
    if (w != null && w.term().equals(context.term())) {
      w.bind(context);
    }
  }

  /** Runs one refresh with the term bound: from its first refresh on, {@code @LeaderOnly} runs. */
  void runBound(LeaderTask task, LeaderContext ctx, JobObserver.Job job) throws Exception {
    bind(ctx);
    TermBinding.Handle binding = TermBinding.bind(owner, ctx);
    try {
      job.observe(
          () -> {
            task.refresh(ctx);
            return null;
          });
    } catch (Exception | Error e) {
      throw e;
    } catch (Throwable t) {
      throw new IllegalStateException(t); // a LeaderTask declares Exception only
    } finally {
      binding.close();
    }
  }

  /**
   * Runs a {@code @LeaderOnly} method if this instance leads, with the term bound to the thread;
   * returns null without running (or counting) it otherwise.
   */
  Object invoke(MethodInvocation invocation, JobObserver.Job job) throws Throwable {
    LeaderContext bound = TermBinding.get(owner);
    if (bound != null && bound.term().equals(termOrNull())) {
      bound.ensureLeader(); // nested inside the task or another @LeaderOnly method of this term
      return job.observe(invocation::proceed);
    }
    TermWork w = work;
    LeaderContext ctx = w == null ? null : w.context();
    if (ctx == null || !ctx.isLeader() || !w.enter()) {
      LOG.debug("[{}] Not leading; skipped {}", name, invocation.getMethod());
      return null;
    }
    try {
      try {
        ctx.ensureLeader();
      } catch (LeadershipLostException e) {
        LOG.debug("[{}] Term ended; skipped {}: {}", name, invocation.getMethod(), e.getMessage());
        return null;
      }
      TermBinding.Handle binding = TermBinding.bind(owner, ctx);
      try {
        return job.observe(invocation::proceed);
      } finally {
        binding.close();
      }
    } finally {
      w.leave();
    }
  }

  private Term termOrNull() {
    TermWork w = work;
    return w == null ? null : w.term();
  }

  /**
   * The term ended (core's {@code onLost}): nothing new starts, running work is interrupted and,
   * for a graceful end, awaited up to the close timeout, before the caller lets the lock go.
   *
   * @return whether the gate had this term
   */
  boolean end(Term term, LossReason reason) {
    TermWork w = work;
    if (w == null || !w.term().equals(term)) {
      return false;
    }
    Set<Thread> still = w.end(reason, closeTimeout);
    work = null;
    if (reason == LossReason.CLOSED || reason == LossReason.REFRESH_FAILED) {
      for (Thread t : still) {
        LOG.error(
            "[{}] @LeaderOnly work on thread {} ignored the interrupt for close-timeout {};"
                + " releasing the lock anyway: make it stop when interrupted",
            name,
            t.getName(),
            closeTimeout);
      }
    }
    return true;
  }
}
