package dev.retsu.lock.internal.term;

import dev.retsu.lock.LossReason;
import dev.retsu.lock.internal.session.PgSession;
import dev.retsu.lock.internal.session.ProofException;
import dev.retsu.lock.internal.session.Session;
import java.sql.SQLException;
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
abstract class TermEnd extends TermFinish implements Session.Listener {

  private static final Logger LOG = LoggerFactory.getLogger(TermEnd.class);

  private volatile boolean interruptedByUs;
  volatile Thread thread;
  volatile long taskDeadline = Long.MAX_VALUE;
  volatile SessionWatchdog watchdog;

  TermEnd(Parts parts) {
    super(parts);
  }

  abstract void wake();

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
  @Override
  public void endSession(LossReason why, Throwable error, boolean abortNow) {
    boolean first = sessionEnd.compareAndSet(null, new SessionEnd(why, error));
    if (first) {
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
   * Ends the session for a close, from any thread: the running refresh is interrupted and awaited
   * up to {@code closeTimeout}; one that ignores the interrupt past it is logged at ERROR, naming
   * its thread, and the terms are finished and the session ended anyway. So is a listener still in
   * {@code onLost} after {@code closeTimeout}: the session is aborted while it runs.
   */
  public void close() {
    endSession(LossReason.CLOSED, null, false);
    if (Thread.currentThread() == thread) {
      return;
    }
    if (running == null && !inJob) {
      // No refresh or job runs: the worker is between refreshes. Finish here (listeners, then the
      // release) so that the lock is free now. Every term was claimed above, so no refresh of one
      // can start any more. If the worker, woken by the end, got there first, bound its listeners
      // as it bounds ours: a hung onLost holds the lock at most closeTimeout either way.
      if (!finishSession(false)) {
        awaitOtherFinisher();
      }
      return;
    }
    if (!awaitDone(options.closeTimeout())) {
      Thread w = thread;
      TermState r = running;
      if (telling != null) {
        abortIfAListenerHangs();
        return;
      }
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
    endNow(LossReason.CLOSED);
  }

  /** {@link #endNow()} for {@code why}. */
  public void endNow(LossReason why) {
    endSession(why, null, false);
    finishSession(false);
  }

  /**
   * Acts on what a probe of the socket found: the session's end ends its terms; anything else
   * pending is read by a proof. Call with the I/O lock free or held by the caller.
   */
  void evidence(PgSession.Evidence found) {
    if (found == PgSession.Evidence.ENDED) {
      sessionEnded(
          LossReason.SESSION_LOST,
          new SQLException("The server ended the session (seen on its socket)", "08006"));
    } else if (found == PgSession.Evidence.PENDING) {
      prove();
    }
  }

  /**
   * Reads the socket for a bare EOF or reset if nothing read it for a slice and nobody is using the
   * session (never queues ahead of a user thread): at most a millisecond on the socket.
   */
  void readIfUnread() {
    if (!session.proofs().unreadFor(SessionWorker.SLICE_NANOS) || !session.tryLockIo()) {
      return;
    }
    try {
      if (endReason() == null && session.isOpen()) {
        evidence(session.probe(0, true));
      }
    } finally {
      session.unlockIo();
    }
  }

  /** Proves the session; what it finds ends terms through this worker (the listener). */
  void prove() {
    try {
      session.prove();
    } catch (ProofException e) {
      // reported to this worker by the session
    }
  }
}
