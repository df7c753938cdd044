package dev.retsu.lock.internal.term;

import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.internal.session.ProofException;
import dev.retsu.lock.internal.session.Session;
import dev.retsu.lock.internal.session.SessionIo;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How the terms of one session end, for every recipe, in one order: a term turns invalid at once
 * (claimed), a refresh running on another thread is interrupted, the worker finishes the term when
 * the refresh returns (or the closing thread after {@code closeTimeout}): {@code onLost}, then the
 * release the {@link ReleasePolicy} says ({@link TermFinish}, the part this object owns). A term
 * ends alone (its own release, a failed or timed-out refresh, a proof that found its key missing)
 * or with its session (lost, shared, closed, self-fenced). Self-fencing differs in one step: the
 * session is aborted right after {@code onLost}, from the fencing thread, well before the server
 * could free its keys. Its state is its own: the session's end (reason and cause, published in one
 * step), and through its finish part who is telling listeners and whether the session is finished.
 * Thread-safe.
 */
final class TermEnd implements SessionIo.Listener {

  private static final Logger LOG = LoggerFactory.getLogger(TermEnd.class);

  /** The worker's logger, for the line it always wrote. */
  private static final Logger WORKER_LOG = LoggerFactory.getLogger(SessionWorker.class);

  /** Why the session ended and through what; the cause may be null. */
  record SessionEnd(LossReason reason, Throwable cause) {}

  private final Session session;
  private final TermOptions options;
  private final TermListeners listeners;
  private final ReleasePolicy policy;
  private final WorkerParts parts;
  private final RunningTask task;
  private final TermFinish finish;

  /** The session's end, reason and cause published in one step. */
  private final AtomicReference<SessionEnd> sessionEnd = new AtomicReference<>();

  TermEnd(WorkerParts parts) {
    this.session = parts.session();
    this.options = parts.options();
    this.listeners = parts.listeners();
    this.policy = parts.policy();
    this.parts = parts;
    this.task = parts.task();
    this.finish = new TermFinish(parts, this);
  }

  /** The session's end, or null while it lives. */
  SessionEnd sessionEnd() {
    return sessionEnd.get();
  }

  /** The session's end reason, or null while it lives. */
  LossReason endReason() {
    SessionEnd e = sessionEnd.get();
    return e == null ? null : e.reason();
  }

  /** Whether the session has ended (its terms then end too). */
  boolean ended() {
    return sessionEnd.get() != null || !session.isOpen();
  }

  /**
   * Ends one term from any thread: invalid at once; a refresh of it running on another thread is
   * interrupted, and the worker finishes it when the refresh returns.
   */
  void endTerm(TermState t, LossReason why, Throwable error) {
    if (t.claim(why, error)) {
      if (task.running() == t) {
        task.interrupt();
      }
      parts.wakeup().wakeAll();
    }
  }

  /**
   * Ends the session and every term on it, from any thread. With {@code abortNow} (self-fencing)
   * listeners are told and the session aborted right here; otherwise the worker finishes.
   */
  void endSession(LossReason why, Throwable error, boolean abortNow) {
    boolean first = sessionEnd.compareAndSet(null, new SessionEnd(why, error));
    if (first) {
      for (TermState t : parts.terms().values()) {
        t.claim(why, error);
      }
      if (policy == ReleasePolicy.UNLOCK_KEY && why != LossReason.CLOSED) {
        LOG.warn(
            "{} Session of backend pid {} ended ({}), ending the terms of its {} keys{}",
            session.id().context(),
            session.id().pid(),
            why,
            parts.terms().size(),
            error == null ? "" : ": " + error);
      }
    }
    if (abortNow) {
      // Self-fencing: listeners told and the session aborted here, before the task is
      // interrupted, so an interrupted worker cannot race to a graceful end that writes to a
      // session that may be partitioned.
      finish.finishSession(true);
    }
    if (first) {
      task.interrupt();
    }
    if (!abortNow) {
      parts.wakeup().wakeAll();
    }
  }

  /** Self-fences: no proof that the session is alive before its deadline. */
  void selfFence() {
    endSession(LossReason.SELF_FENCED, session.proofs().fence().timeout(options.bounds()), true);
  }

  /** A refresh that ran past {@code refreshTimeout}: its term ends, the others go on. */
  void refreshTimedOut(TermState t) {
    if (!t.claim(
        LossReason.REFRESH_TIMED_OUT,
        new TimeoutException(
            "The refresh ran longer than refreshTimeout " + options.refreshTimeout()))) {
      return;
    }
    listeners.refreshed(t, options.refreshTimeout(), t.cause());
    // Under END_SESSION the session is the term's alone: release it now, not after the task
    // (aborting it also unblocks a task hung in a statement on it).
    if (policy != ReleasePolicy.END_SESSION || !finish.finishAborting(t, task::interrupt)) {
      task.interrupt();
      parts.wakeup().wakeAll();
    }
  }

  /**
   * Ends the session for a close, from any thread: the running refresh is interrupted and awaited
   * up to {@code closeTimeout}; one that ignores the interrupt past it is logged at ERROR, naming
   * its thread, and the terms are finished and the session ended anyway. So is a listener still in
   * {@code onLost} after {@code closeTimeout}: the session is aborted while it runs.
   */
  void close() {
    endSession(LossReason.CLOSED, null, false);
    if (task.onWorkerThread()) {
      return;
    }
    if (task.running() == null && !task.inJob()) {
      // No refresh or job runs: the worker is between refreshes. Finish here (listeners, then the
      // release) so that the lock is free now. Every term was claimed above, so no refresh of one
      // can start any more. If the worker, woken by the end, got there first, bound its listeners
      // as it bounds ours: a hung onLost holds the lock at most closeTimeout either way.
      if (!finish.finishSession(false)) {
        finish.awaitOtherFinisher();
      }
      return;
    }
    if (!finish.awaitDone(options.closeTimeout())) {
      Thread w = task.thread();
      TermState r = task.running();
      if (finish.telling() != null) {
        finish.abortIfAListenerHangs();
        return;
      }
      LOG.error(
          "{} The refresh of term {} on thread {} ignored the interrupt for closeTimeout {};"
              + " releasing the lock anyway: make the task stop when interrupted",
          session.id().context(),
          r == null ? "?" : r.term().number(),
          w == null ? "?" : w.getName(),
          options.closeTimeout());
      finish.finishSession(false);
    }
  }

  /**
   * Ends the session with {@code why} and finishes its terms on the calling thread, for a worker
   * that never ran (a loop closed or yielding between the grant and the announcement).
   */
  void endNow(LossReason why) {
    endSession(why, null, false);
    finish.finishSession(false);
  }

  /**
   * Acts on what a probe of the socket found: the session's end ends its terms; anything else
   * pending is read by a proof. Call with the I/O lock free or held by the caller.
   */
  void evidence(SessionIo.Evidence found) {
    if (found == SessionIo.Evidence.ENDED) {
      endSession(
          LossReason.SESSION_LOST,
          new SQLException("The server ended the session (seen on its socket)", "08006"),
          false);
    } else if (found == SessionIo.Evidence.PENDING) {
      prove();
    }
  }

  /** Proves the session; what it finds ends terms through the worker (the session's listener). */
  void prove() {
    try {
      session.prove();
    } catch (ProofException e) {
      // reported to the worker by the session
    }
  }

  // ---- what the session reports (on the thread that saw it, its I/O lock held) ----

  @Override
  public void sessionEnded(LossReason reason, Throwable cause) {
    endSession(reason, cause, false);
  }

  @Override
  public void keysLost(Set<LockKey> keys) {
    for (LockKey k : keys) {
      TermState t = parts.terms().get(k);
      if (t != null) {
        WORKER_LOG.warn(
            "{} {} is no longer held by its session (unlocked by user SQL?)",
            session.id().context(),
            k);
        endTerm(
            t,
            LossReason.LOCK_NOT_HELD,
            new IllegalStateException(
                "Backend " + session.id().pid() + " is alive but no longer holds " + k));
      }
    }
  }

  // ---- the finish part: onLost, then the release ----

  /** Worker: finishes the terms that ended while no refresh of theirs ran. */
  void finishEnded() {
    finish.finishEnded();
  }

  /**
   * Tells listeners of every term's end, then ends the session; once.
   *
   * @return true for the one call that did it
   */
  boolean finishSession(boolean abort) {
    return finish.finishSession(abort);
  }

  /** Waits up to {@code closeTimeout} for the thread that took over finishing the session. */
  void awaitOtherFinisher() {
    finish.awaitOtherFinisher();
  }

  /** A listener still in {@code onLost}: logged at ERROR, and the session aborted under it. */
  void abortIfAListenerHangs() {
    finish.abortIfAListenerHangs();
  }

  /** Whether the session was finished: every term told and released. */
  boolean done() {
    return finish.done();
  }

  /** Waits up to {@code timeout} for the session to have been finished; true if it has. */
  boolean awaitDone(Duration timeout) {
    return finish.awaitDone(timeout);
  }

  /** The thread telling listeners of a term's end right now, or null. */
  Thread telling() {
    return finish.telling();
  }

  /** When the thread {@link #telling()} began (monotonic); meaningful while it is set. */
  long tellingSince() {
    return finish.tellingSince();
  }
}
