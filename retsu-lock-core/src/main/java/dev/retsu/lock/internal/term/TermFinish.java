package dev.retsu.lock.internal.term;

import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import dev.retsu.lock.internal.session.Notices;
import dev.retsu.lock.internal.session.ProofException;
import dev.retsu.lock.internal.session.Session;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How the terms of one session are finished once they ended, for every recipe: {@code onLost} once
 * per term, then the release the {@link ReleasePolicy} says (end the session, or unlock the keys of
 * the terms that ended gracefully), and the latch a closing thread waits on. Its state is its own:
 * who is telling listeners now, the terms whose keys the session's end releases, whether the
 * session was finished. Which term ends and why is its {@link TermEnd}'s, which owns this part.
 * Thread-safe.
 */
final class TermFinish {

  /** The term end's logger: these lines are the term end's, as they always were. */
  private static final Logger LOG = LoggerFactory.getLogger(TermEnd.class);

  /**
   * Terms in the order they started. A constant, linked when the class is initialised (the warm-up
   * does that while standing by): a lambda at the call site was linked on the first close, on the
   * old leader's close path before its session ended, costing milliseconds of the takeover.
   */
  private static final Comparator<TermState> BY_NUMBER =
      Comparator.comparingLong(t -> t.term().number());

  private final Session session;
  private final TermOptions options;
  private final TermListeners listeners;
  private final ReleasePolicy policy;
  private final SessionWorker.Owner owner;
  private final Map<LockKey, TermState> terms;
  private final RunningTask task;
  private final TermEnd ends;
  private final CountDownLatch done = new CountDownLatch(1);
  private final AtomicBoolean finished = new AtomicBoolean();

  /** Terms told of their end whose keys the session's graceful end releases (notified then). */
  private final List<TermState> releasedAtEnd = new CopyOnWriteArrayList<>();

  /** The thread telling listeners of a term's end right now, or null. */
  private volatile Thread telling;

  /**
   * Terms another thread is finishing one by one (counted before it claims one to finish, until its
   * listeners returned and its release is done): the session's end waits for them, so that no
   * listener is still in {@code onLost} of a term when its lock is released.
   */
  private final InFlight inFlight = new InFlight();

  /** When {@link #telling} began (monotonic); meaningful while it is set. */
  private volatile long tellingSince;

  TermFinish(WorkerParts parts, TermEnd ends) {
    this.session = parts.session();
    this.options = parts.options();
    this.listeners = parts.listeners();
    this.policy = parts.policy();
    this.owner = parts.owner();
    this.terms = parts.terms();
    this.task = parts.task();
    this.ends = ends;
  }

  /** Whether the session was finished: every term told and released, the latch open. */
  boolean done() {
    return done.getCount() == 0;
  }

  /** The thread telling listeners of a term's end right now, or null. */
  Thread telling() {
    return telling;
  }

  /** When the thread {@link #telling()} began (monotonic); meaningful while it is set. */
  long tellingSince() {
    return tellingSince;
  }

  /**
   * Worker: finishes the terms that ended while no refresh of theirs ran. Under {@link
   * ReleasePolicy#UNLOCK_KEY} every such term hears {@code onLost} first, then the keys of those
   * that ended gracefully are unlocked in one statement.
   */
  void finishEnded() {
    List<LockKey> unlock = new ArrayList<>();
    List<TermState> unlockedTerms = new ArrayList<>();
    for (TermState t : new ArrayList<>(terms.values())) {
      if (!t.ended() || task.running() == t) {
        continue;
      }
      if (policy == ReleasePolicy.END_SESSION) {
        finish(t, false);
        continue;
      }
      inFlight.enter();
      try {
        if (!t.startFinishing()) {
          continue;
        }
        terms.remove(t.term().key(), t);
        try {
          tell(t);
        } finally {
          owner.termEnded(t);
        }
        if (policy.unlocks(t.reason())) {
          unlock.add(t.term().key());
          unlockedTerms.add(t);
          if (ends.endReason() != null) {
            releasedAtEnd.add(t); // the session's end releases it: notified then
          }
        }
      } finally {
        inFlight.exit();
      }
    }
    if (!unlock.isEmpty() && ends.endReason() == null && session.isOpen()) {
      try {
        session.unlock(unlock, releasedNotices(unlockedTerms));
      } catch (java.sql.SQLException e) {
        // Not knowing whether the keys are still held, end the session: that releases them.
        ends.endSession(LossReason.SESSION_LOST, e, false);
      } catch (ProofException e) {
        ends.endSession(e.reason(), e.getCause(), false);
      }
    }
  }

  /**
   * The one term of an {@link ReleasePolicy#END_SESSION} session: {@code onLost}, then the session
   * ends (aborted with {@code abort}), which releases the key; once, whoever comes first.
   */
  void finish(TermState t, boolean abort) {
    inFlight.enter();
    try {
      if (t.startFinishing()) {
        finishClaimed(t, abort);
      }
    } finally {
      inFlight.exit();
    }
  }

  /**
   * {@link #finish} with an abort, running {@code first} (the task's interrupt) once this thread
   * claimed the term to finish.
   *
   * @return false if another thread finishes it
   */
  boolean finishAborting(TermState t, Runnable first) {
    inFlight.enter();
    try {
      if (!t.startFinishing()) {
        return false;
      }
      first.run();
      finishClaimed(t, true);
      return true;
    } finally {
      inFlight.exit();
    }
  }

  /**
   * {@link #finish} of a term the caller already claimed to finish ({@code startFinishing}); the
   * caller counts itself in flight first.
   */
  private void finishClaimed(TermState t, boolean abort) {
    terms.remove(t.term().key(), t);
    try {
      tell(t);
    } finally {
      try {
        if (abort) {
          session.io().abort();
        } else {
          session.end(policy.unlocks(t.reason()) ? releasedNotices(List.of(t)) : new String[0]);
        }
      } finally {
        logEnd(t); // after the release: a successor waits for nothing here
        owner.termEnded(t);
        done.countDown();
      }
    }
  }

  /**
   * Waits, up to {@code closeTimeout}, for the thread that took over finishing the session (a close
   * between refreshes finishes on the closing thread); a listener still in {@code onLost} then is
   * logged at ERROR and the session aborted, so the lock is released anyway.
   */
  void awaitOtherFinisher() {
    if (!awaitDone(options.closeTimeout())) {
      abortIfAListenerHangs();
    }
  }

  /** A listener still in {@code onLost}: logged at ERROR, and the session aborted under it. */
  void abortIfAListenerHangs() {
    Thread listening = telling;
    if (listening != null) {
      LOG.error(
          "{} A listener has been in onLost on thread {} for closeTimeout {}; releasing the lock"
              + " anyway: make listeners return promptly",
          session.id().context(),
          listening.getName(),
          options.closeTimeout());
      session.io().abort(); // no write: the listener's thread may be in a call on the session
    }
  }

  /**
   * Tells listeners of every term's end, then ends the session; once.
   *
   * @return true for the one call that did it
   */
  boolean finishSession(boolean abort) {
    if (!finished.compareAndSet(false, true)) {
      return false;
    }
    TermEnd.SessionEnd end = ends.sessionEnd();
    LossReason why = end != null ? end.reason() : LossReason.CLOSED;
    Throwable endCause = end != null ? end.cause() : null;
    List<TermState> told = new ArrayList<>();
    try {
      List<TermState> all = new ArrayList<>(terms.values());
      if (all.size() > 1) {
        all.sort(BY_NUMBER);
      }
      for (TermState t : all) {
        t.claim(why, endCause); // one added meanwhile
        if (t.startFinishing()) {
          terms.remove(t.term().key(), t);
          told.add(t);
          tell(t);
          owner.termEnded(t);
        }
      }
    } finally {
      if (!abort && !inFlight.awaitNone(options.closeTimeout())) {
        abortIfAListenerHangs(); // a listener of a term another thread finishes hangs
      }
      if (abort) {
        session.io().abort();
      } else {
        List<TermState> released = new ArrayList<>(releasedAtEnd);
        released.addAll(told);
        session.end(policy.unlocks(why) ? releasedNotices(released) : new String[0]);
      }
      if (policy == ReleasePolicy.END_SESSION) {
        for (TermState t : told) {
          logEnd(t); // after the release: a successor waits for nothing here
        }
      }
      owner.sessionFinished(why, endCause);
      done.countDown();
    }
    return true;
  }

  /** The {@code released} notices of terms whose keys this session releases gracefully now. */
  private String[] releasedNotices(List<TermState> released) {
    String[] out = new String[released.size()];
    for (int i = 0; i < out.length; i++) {
      Term t = released.get(i).term();
      out[i] = Notices.released(t.key(), session.id().pid(), t.fencingToken());
    }
    return out;
  }

  /** {@code onLost} for one term, with this thread recorded as the one telling. */
  private void tell(TermState t) {
    tellingSince = options.time().nanoTime();
    telling = Thread.currentThread();
    task.wakeWatchdog(); // it keeps the session proven while a listener waits before the release
    try {
      listeners.lost(t);
    } finally {
      telling = null;
    }
  }

  /** A release this process asked for at INFO; a loss it did not (an eviction, say) at WARN. */
  private void logEnd(TermState t) {
    LossReason why = t.reason();
    boolean asked = why == LossReason.CLOSED || why == LossReason.YIELDED;
    String format = "{} Leadership {} ({}) after {}: term {}, token {}{}";
    Object[] args = {
      session.id().context(),
      asked ? "released" : "lost",
      why,
      Duration.between(t.term().start(), options.time().now()),
      t.term().number(),
      t.term().fencingToken(),
      t.cause() == null ? "" : ": " + t.cause()
    };
    if (asked) {
      LOG.info(format, args);
    } else {
      LOG.warn(format, args);
    }
  }

  /**
   * Waits up to {@code timeout} for the worker to have finished the session.
   *
   * @return true if it has
   */
  boolean awaitDone(Duration timeout) {
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
