package dev.retsu.lock.spring.boot;

import dev.retsu.lock.LeaderContext;
import dev.retsu.lock.LeaderTask;
import dev.retsu.lock.LeadershipLostException;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import java.time.Duration;
import java.util.Set;
import java.util.function.BooleanSupplier;
import org.aopalliance.intercept.MethodInvocation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code @LeaderOnly} gate of one leadership (a named leader, or one key of a group): leader
 * work may start only while the term is on and its context has been handed to the first refresh; it
 * runs with the term bound to its thread; and the term's end interrupts it and, when the lock is
 * still the term's to release, awaits it before the lock is released. Every way of leading (the
 * loop, a test mode, a group key) drives the same gate, so the rule has one home. Thread-safe.
 */
final class LeaderGate {

  private static final Logger LOG = LoggerFactory.getLogger(LeaderGate.class);

  /** How often a wait for work looks whether a stop came meanwhile: 50 ms. */
  private static final Duration SLICE = Duration.ofMillis(50);

  private final Object owner;
  private final String name;
  private final Duration closeTimeout;
  private final BooleanSupplier stopping;
  private volatile TermWork work;

  /**
   * @param owner whose {@link LeaderDataSource} finds the bound term
   * @param name for logs: {@code leader=x} or {@code group=g, key=k}
   * @param closeTimeout how long a stop waits for running work; how often a yield's wait is logged
   * @param stopping whether the owner is being stopped (the application shuts down)
   */
  LeaderGate(Object owner, String name, Duration closeTimeout, BooleanSupplier stopping) {
    this.owner = owner;
    this.name = name;
    this.closeTimeout = closeTimeout;
    this.stopping = stopping;
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
   * The term ended (core's {@code onLost}, on the thread that ends it, before core releases the
   * lock): nothing new starts and running work is interrupted. When the lock is still this term's
   * to release ({@code CLOSED}, {@code YIELDED}, {@code REFRESH_FAILED}: a stop, a yield, a
   * hand-over to a preferred candidate, a group's yield or rebalance) the work is awaited first,
   * since the release lets a successor start. A stop of the leader or group waits up to {@code
   * closeTimeout}, then logs at ERROR and lets the lock go (the application is shutting down); any
   * other voluntary end keeps the lock until the work has ended, logging at WARN, with the threads'
   * names, every {@code closeTimeout} it waits (or until a stop comes). Other reasons do not wait:
   * the lock may be gone already, or (self-fencing) must be released at once.
   *
   * @return whether the gate had this term
   */
  boolean end(Term term, LossReason reason) {
    TermWork w = work;
    if (w == null || !w.term().equals(term)) {
      return false;
    }
    w.stop();
    try {
      if (holdsLock(reason)) {
        awaitWork(w, reason);
      }
    } finally {
      work = null;
    }
    return true;
  }

  /** Whether a term that ended for {@code reason} still holds its lock, so releases it itself. */
  static boolean holdsLock(LossReason reason) {
    return reason == LossReason.CLOSED
        || reason == LossReason.YIELDED
        || reason == LossReason.REFRESH_FAILED;
  }

  private void awaitWork(TermWork w, LossReason reason) {
    long started = System.nanoTime();
    boolean stop = stopping.getAsBoolean();
    long stopSeen = started;
    Duration nextWarning = closeTimeout;
    for (Set<Thread> still = w.awaitOthers(SLICE); !still.isEmpty(); still = w.awaitOthers(SLICE)) {
      long now = System.nanoTime();
      if (!stop && stopping.getAsBoolean()) {
        stop = true;
        stopSeen = now;
      }
      if (stop) {
        if (now - stopSeen >= closeTimeout.toNanos()) {
          LOG.error(
              "[{}] @LeaderOnly work on thread(s) {} ignored the interrupt for close-timeout {} of"
                  + " a stop (the term ended: {}); releasing the lock anyway: make it stop when"
                  + " interrupted",
              name,
              names(still),
              closeTimeout,
              reason);
          return;
        }
      } else if (now - started >= nextWarning.toNanos()) {
        LOG.warn(
            "[{}] @LeaderOnly work on thread(s) {} still runs {} after the term ended ({}); thread"
                + " {} keeps the lock until it ends: make it stop when interrupted",
            name,
            names(still),
            nextWarning,
            reason,
            Thread.currentThread().getName());
        nextWarning = nextWarning.plus(closeTimeout);
      }
    }
  }

  private static String names(Set<Thread> threads) {
    StringBuilder b = new StringBuilder();
    for (Thread t : threads) {
      b.append(b.length() == 0 ? "" : ", ").append(t.getName());
    }
    return b.toString();
  }

  /**
   * Runs a yield of this gate's term from the calling thread: when that thread runs the term's
   * work, the release does not wait for it (it waits in the yield, acting no more).
   */
  <T> T handingOver(java.util.function.Supplier<T> yield) {
    TermWork w = work;
    if (w == null) {
      return yield.get();
    }
    w.handingOver(true);
    try {
      return yield.get();
    } finally {
      w.handingOver(false);
    }
  }
}
