package dev.retsu.lock.internal.term;

import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.internal.session.ProofException;
import dev.retsu.lock.internal.session.Session;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How the terms of one session end, for every recipe, in one order: a term turns invalid at once
 * (claimed), a refresh running on another thread is interrupted, the worker finishes the term when
 * the refresh returns (or the closing thread after {@code closeTimeout}): {@code onLost}, then the
 * release the {@link ReleasePolicy} says. A term ends alone (its own release, a failed or timed-out
 * refresh, a proof that found its key missing) or with its session (lost, shared, closed,
 * self-fenced). Self-fencing differs in one step: the session is aborted right after {@code
 * onLost}, from the fencing thread, well before the server could free its keys. Thread-safe.
 */
abstract class TermEnd implements Session.Listener {

  private static final Logger LOG = LoggerFactory.getLogger(TermEnd.class);

  /** What the recipe hears from a worker. */
  public interface Owner {
    /** Hears nothing. */
    Owner NONE = new Owner() {};

    /**
     * A term of the session was finished: listeners told, its key released or its session ended.
     */
    default void termEnded(TermState t) {}

    /** The session ended and every term on it was finished. */
    default void sessionFinished(LossReason reason, Throwable cause) {}
  }

  final Session session;
  final TermOptions options;
  final TermListeners listeners;
  final ReleasePolicy policy;
  final Owner owner;
  final BooleanSupplier closing;
  final Map<LockKey, TermState> terms = new ConcurrentHashMap<>();
  final CountDownLatch done = new CountDownLatch(1);
  private final AtomicReference<LossReason> endReason = new AtomicReference<>();
  private final AtomicBoolean finished = new AtomicBoolean();
  private volatile Throwable endCause;
  private volatile boolean interruptedByUs;
  volatile Thread thread;
  volatile TermState running;
  volatile long taskDeadline = Long.MAX_VALUE;
  volatile SessionWatchdog watchdog;

  TermEnd(
      Session session,
      TermOptions options,
      TermListeners listeners,
      ReleasePolicy policy,
      Owner owner,
      BooleanSupplier closing) {
    this.session = session;
    this.options = options;
    this.listeners = listeners;
    this.policy = policy;
    this.owner = owner;
    this.closing = closing;
  }

  abstract void wake();

  /** The session's end reason, or null while it lives. */
  LossReason endReason() {
    return endReason.get();
  }

  /** Whether the session has ended (its terms then end too). */
  public boolean ended() {
    return endReason.get() != null || !session.isOpen();
  }

  /** The session. */
  public Session session() {
    return session;
  }

  String context(TermState t) {
    return session.id().context();
  }

  void watchdogWake() {
    SessionWatchdog w = watchdog;
    if (w != null) {
      w.wake();
    }
  }

  /**
   * Ends one term from any thread: invalid at once; a refresh of it running on another thread is
   * interrupted, and the worker finishes it when the refresh returns.
   */
  public void endTerm(TermState t, LossReason why, Throwable error) {
    if (t.claim(why, error)) {
      if (running == t) {
        interruptTask();
      }
      wake();
    }
  }

  /**
   * Ends the session and every term on it, from any thread. With {@code abortNow} (self-fencing)
   * listeners are told and the session aborted right here; otherwise the worker finishes.
   */
  public void endSession(LossReason why, Throwable error, boolean abortNow) {
    boolean first = endReason.compareAndSet(null, why);
    if (first) {
      endCause = error;
      for (TermState t : terms.values()) {
        t.claim(why, error);
      }
      if (policy == ReleasePolicy.UNLOCK_KEY && why != LossReason.CLOSED) {
        LOG.warn(
            "{} Session of backend pid {} ended ({}), ending the terms of its {} keys{}",
            session.id().context(),
            session.id().pid(),
            why,
            terms.size(),
            error == null ? "" : ": " + error);
      }
    }
    if (abortNow) {
      // Self-fencing: listeners told and the session aborted here, before the task is
      // interrupted, so an interrupted worker cannot race to a graceful end that writes to a
      // session that may be partitioned.
      finishSession(true);
    }
    if (first) {
      interruptTask();
    }
    if (!abortNow) {
      wake();
    }
  }

  /** Self-fences: no proof that the session is alive before its deadline. */
  public void selfFence() {
    endSession(LossReason.SELF_FENCED, session.proofs().fence().timeout(options.bounds()), true);
  }

  /** A refresh that ran past {@code refreshTimeout}: its term ends, the others go on. */
  void refreshTimedOut(TermState t) {
    if (!t.claim(
        LossReason.REFRESH_TIMED_OUT,
        new java.util.concurrent.TimeoutException(
            "The refresh ran longer than refreshTimeout " + options.refreshTimeout()))) {
      return;
    }
    listeners.refreshed(t, options.refreshTimeout(), t.cause());
    if (policy == ReleasePolicy.END_SESSION && t.startFinishing()) {
      // The session is the term's alone: release it now, not after the task (aborting it also
      // unblocks a task hung in a statement on it).
      interruptTask();
      finishClaimed(t, true);
    } else {
      interruptTask();
      wake();
    }
  }

  /** Interrupts the worker if it runs a task and this is another thread. */
  void interruptTask() {
    Thread w = thread;
    if (running != null && w != null && Thread.currentThread() != w) {
      interruptedByUs = true;
      w.interrupt();
    }
  }

  /** Whether the worker's thread was interrupted by someone else than this worker. */
  boolean interruptedByCaller() {
    return Thread.currentThread().isInterrupted() && !interruptedByUs;
  }

  /** Clears our own interrupt on the worker's thread (a stop request from the caller stays). */
  void clearOwnInterrupt() {
    if (interruptedByUs) {
      interruptedByUs = false;
      Thread.interrupted();
    }
  }

  /**
   * Worker: finishes the terms that ended while no refresh of theirs ran. Under {@link
   * ReleasePolicy#UNLOCK_KEY} every such term hears {@code onLost} first, then the keys of those
   * that ended gracefully are unlocked in one statement.
   */
  void finishEnded() {
    List<LockKey> unlock = new ArrayList<>();
    for (TermState t : new ArrayList<>(terms.values())) {
      if (!t.ended() || running == t) {
        continue;
      }
      if (policy == ReleasePolicy.END_SESSION) {
        finish(t, false);
      } else if (t.startFinishing()) {
        terms.remove(t.term().key(), t);
        try {
          listeners.lost(t);
        } finally {
          owner.termEnded(t);
        }
        if (policy.unlocks(t.reason())) {
          unlock.add(t.term().key());
        }
      }
    }
    if (!unlock.isEmpty() && endReason() == null && session.isOpen()) {
      try {
        session.unlock(unlock);
      } catch (java.sql.SQLException e) {
        // Not knowing whether the keys are still held, end the session: that releases them.
        endSession(LossReason.SESSION_LOST, e, false);
      } catch (ProofException e) {
        endSession(e.reason(), e.getCause(), false);
      }
    }
  }

  /**
   * The one term of an {@link ReleasePolicy#END_SESSION} session: {@code onLost}, then the session
   * ends (aborted with {@code abort}), which releases the key; once, whoever comes first.
   */
  void finish(TermState t, boolean abort) {
    if (t.startFinishing()) {
      finishClaimed(t, abort);
    }
  }

  private void finishClaimed(TermState t, boolean abort) {
    terms.remove(t.term().key(), t);
    try {
      logEnd(t);
      listeners.lost(t);
    } finally {
      try {
        if (abort) {
          session.abort();
        } else {
          session.end();
        }
      } finally {
        owner.termEnded(t);
        done.countDown();
      }
    }
  }

  /** Tells listeners of every term's end, then ends the session; once. */
  void finishSession(boolean abort) {
    if (!finished.compareAndSet(false, true)) {
      return;
    }
    LossReason why = endReason.get() != null ? endReason.get() : LossReason.CLOSED;
    try {
      List<TermState> all = new ArrayList<>(terms.values());
      all.sort(Comparator.comparingLong(t -> t.term().number()));
      for (TermState t : all) {
        t.claim(why, endCause); // one added meanwhile
        if (t.startFinishing()) {
          terms.remove(t.term().key(), t);
          if (policy == ReleasePolicy.END_SESSION) {
            logEnd(t);
          }
          listeners.lost(t);
          owner.termEnded(t);
        }
      }
    } finally {
      if (abort) {
        session.abort();
      } else {
        session.end();
      }
      owner.sessionFinished(why, endCause);
      done.countDown();
    }
  }

  private void logEnd(TermState t) {
    LossReason why = t.reason();
    LOG.info(
        "{} Leadership {} ({}) after {}: term {}, token {}{}",
        session.id().context(),
        why == LossReason.CLOSED ? "released" : "lost",
        why,
        Duration.between(t.term().start(), options.time().now()),
        t.term().number(),
        t.term().fencingToken(),
        t.cause() == null ? "" : ": " + t.cause());
  }

  /**
   * Ends the session for a close, from any thread: the running refresh is interrupted and awaited
   * up to {@code closeTimeout}; one that ignores the interrupt past it is logged at ERROR, naming
   * its thread, and the terms are finished and the session ended anyway.
   */
  public void close() {
    endSession(LossReason.CLOSED, null, false);
    if (Thread.currentThread() == thread) {
      return;
    }
    if (!awaitDone(options.closeTimeout())) {
      Thread w = thread;
      TermState r = running;
      LOG.error(
          "{} The refresh of term {} on thread {} ignored the interrupt for closeTimeout {};"
              + " releasing the lock anyway: make the task stop when interrupted",
          session.id().context(),
          r == null ? "?" : r.term().number(),
          w == null ? "?" : w.getName(),
          options.closeTimeout());
      finishSession(false);
    }
  }

  /**
   * Ends the session and finishes its terms on the calling thread, for a worker that never ran (a
   * loop closed between the grant and the announcement).
   */
  public void endNow() {
    endSession(LossReason.CLOSED, null, false);
    finishSession(false);
  }

  /**
   * Waits up to {@code timeout} for the worker to have finished the session.
   *
   * @return true if it has
   */
  public boolean awaitDone(Duration timeout) {
    boolean interrupted = false;
    try {
      while (true) {
        try {
          return done.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
