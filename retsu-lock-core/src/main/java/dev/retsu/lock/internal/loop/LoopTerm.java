package dev.retsu.lock.internal.loop;

import dev.retsu.lock.AdvisoryLockException;
import dev.retsu.lock.AttemptResult;
import dev.retsu.lock.FencingToken;
import dev.retsu.lock.LeaderTask;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import dev.retsu.lock.internal.session.Session;
import dev.retsu.lock.internal.term.ReleasePolicy;
import dev.retsu.lock.internal.term.SessionWatchdog;
import dev.retsu.lock.internal.term.SessionWorker;
import dev.retsu.lock.internal.term.TermListeners;
import dev.retsu.lock.internal.term.TermState;
import java.sql.SQLException;
import java.time.Duration;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One term of a loop on the session that won the key: the fencing token, the announcement, then the
 * shared {@link SessionWorker} on the loop's thread until the term ends. The session is the term's
 * alone ({@link ReleasePolicy#END_SESSION}). Not thread-safe except {@link #close()}.
 */
public final class LoopTerm {

  private static final Logger LOG = LoggerFactory.getLogger(LoopTerm.class);

  private final SessionWorker worker;
  private final TermState state;
  private final LoopSettings settings;

  private LoopTerm(SessionWorker worker, TermState state, LoopSettings settings) {
    this.worker = worker;
    this.state = state;
    this.settings = settings;
  }

  /**
   * Takes the fencing token on the session that won the key: the term, not announced yet.
   *
   * @throws AdvisoryLockException if the token could not be taken; the session is ended then
   */
  public static LoopTerm begin(
      Session session,
      long number,
      LoopSettings settings,
      TermListeners listeners,
      BooleanSupplier closing) {
    FencingToken token;
    try {
      token = session.fencingToken(java.util.List.of(settings.key()));
    } catch (SQLException e) {
      session.end();
      throw new AdvisoryLockException(
          "Taking the fencing token failed (SQLState "
              + e.getSQLState()
              + "); the session was ended, which releases the lock once the server ends its backend"
              + " (a backend waiting for a synchronous standby to confirm the token's commit keeps"
              + " it until then)",
          settings.key(),
          settings.candidateId(),
          e);
    } catch (AdvisoryLockException e) {
      session.end();
      throw e;
    }
    SessionWorker worker =
        new SessionWorker(
            session,
            settings.term(),
            listeners,
            ReleasePolicy.END_SESSION,
            SessionWorker.Owner.NONE,
            closing);
    Term t =
        new Term(
            number,
            settings.key(),
            settings.candidateId(),
            settings.term().time().now(),
            token,
            session.id().pid(),
            session.id().route().path());
    return new LoopTerm(worker, worker.begin(t), settings);
  }

  /** The term's state (the task's context). */
  public TermState state() {
    return state;
  }

  /**
   * Announces the term, then leads on this thread until it ends; returns once its end is finished
   * (listeners told, the session ended). A loop closed before the announcement releases the lock
   * and tells nobody.
   *
   * @param attemptTook how long the attempt that won the lock took, for {@code onAttempt}
   */
  public LossReason lead(
      LeaderTask task,
      Duration attemptTook,
      TermListeners listeners,
      SessionWatchdog watchdog,
      BooleanSupplier closing,
      boolean previousGraceful,
      int preferredWaiting) {
    if (closing.getAsBoolean()) {
      worker.endNow(); // nobody heard of it: no listeners, just the lock
      return LossReason.CLOSED;
    }
    Term t = state.term();
    if (preferredWaiting != 0) {
      // Granted ahead of a preferred candidate that queued later: hand over before any work.
      LOG.info(
          "{} Granted the lock ahead of a preferred candidate (backend pid {}): handing over",
          settings.context(),
          preferredWaiting);
      worker.endNow(LossReason.YIELDED);
      return LossReason.YIELDED;
    }
    listeners.attempt(AttemptResult.ACQUIRED, attemptTook, null);
    LOG.info(
        "{} Leadership acquired: term {}, fencing token {}, backend pid {}, database {}",
        settings.context(),
        t.number(),
        t.fencingToken(),
        t.backendPid(),
        worker.session().id().database());
    Duration delay = settings.takeoverDelay();
    if (!delay.isZero() && !previousGraceful) {
      // The previous term may have ended without stopping its work first (a crash, a terminated
      // session): act only once it must have fenced itself. The worker proves the session
      // meanwhile and announces the term at its first refresh.
      LOG.info(
          "{} The previous term may not have ended gracefully: first work in {} (takeoverDelay)",
          settings.context(),
          delay);
      worker.delayFirstRefresh(state, delay);
    } else {
      worker.announce(state);
    }
    watchdog.watch(worker);
    worker.run(settings.preferred() ? task : yieldingToPreferred(task));
    if (!worker.awaitDone(settings.term().closeTimeout())) {
      // The term's end is logged after its release, which waits for onLost: say it here.
      LOG.warn(
          "{} Leadership {} ({}): term {}, token {}; a listener has been in onLost for over {},"
              + " and the lock is released once it returns",
          settings.context(),
          state.reason() == LossReason.CLOSED ? "released" : "lost",
          state.reason(),
          state.term().number(),
          state.term().fencingToken(),
          settings.term().closeTimeout());
    }
    return state.reason() != null ? state.reason() : LossReason.CLOSED;
  }

  /**
   * The task of a leader that is not preferred: before each refresh but the first (which comes
   * right after a takeover, before which a waiting preferred standby would have won), one look for
   * a preferred candidate waiting for this session's key; when one waits, the term ends ({@link
   * LossReason#YIELDED}) instead of refreshing, and the server grants the key to that waiting
   * session when this one ends.
   */
  private LeaderTask yieldingToPreferred(LeaderTask task) {
    return new YieldingToPreferred(task, this);
  }

  /**
   * {@link #yieldingToPreferred}'s task: a class, not a lambda, so that a takeover links nothing
   * new ({@link WarmUp} loads it while this candidate is a standby).
   */
  static final class YieldingToPreferred implements LeaderTask {
    private final LeaderTask task;
    private final LoopTerm term;

    YieldingToPreferred(LeaderTask task, LoopTerm term) {
      this.task = task;
      this.term = term;
    }

    @Override
    public void refresh(dev.retsu.lock.LeaderContext ctx) throws Exception {
      if (term.state.refreshes() == 0) {
        task.refresh(ctx); // a preferred standby queued first would have won: no round trip now
        return;
      }
      int waiting = term.worker.session().preferredWaiting();
      if (waiting != 0) {
        LOG.info(
            "{} A preferred candidate waits for the key (backend pid {}): handing over",
            term.settings.context(),
            waiting);
        term.worker.endTerm(term.state, LossReason.YIELDED, null);
        return;
      }
      task.refresh(ctx);
    }
  }

  /**
   * Ends the term gracefully to hand over ({@link LossReason#YIELDED}), from any thread; waits for
   * the release unless called from the term's own thread.
   *
   * @return true if this call ended the term
   */
  public boolean yieldTerm() {
    if (state.ended()) {
      return false;
    }
    worker.endSession(LossReason.YIELDED, null, false);
    boolean ended = state.reason() == LossReason.YIELDED;
    if (Thread.currentThread() != worker.thread()) {
      worker.awaitDone(settings.term().closeTimeout());
    }
    return ended;
  }

  /** The term's session (its proofs give the renewal and the deadline). */
  public dev.retsu.lock.internal.session.Session session() {
    return worker.session();
  }

  /** Ends the term for the loop's close, from any thread (see {@link SessionWorker#close()}). */
  public void close() {
    worker.close();
  }
}
