package dev.retsu.lock;

import java.sql.SQLException;
import java.time.Duration;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One term on the loop's thread, from its start to its end: take the fencing token, announce the
 * term, then refresh and wait on the session's socket until the next refresh, proving ownership
 * every {@code heartbeatInterval} when nothing else did, until the term ends. Between refreshes a
 * terminated session or a stopped server ends the term within milliseconds, because the wait is a
 * read on the session's own socket. Not thread-safe: one runner per term.
 */
final class TermRunner {

  private static final Logger LOG = LoggerFactory.getLogger(TermRunner.class);

  private final LeaderTerm term;
  private final LoopSettings settings;
  private final Listeners listeners;
  private final TimeSource time;
  private final Wakeup wakeup;
  private final BooleanSupplier closed;
  private int refreshes;

  TermRunner(LeaderTerm term, Listeners listeners, Wakeup wakeup, BooleanSupplier closed) {
    this.term = term;
    this.settings = term.settings;
    this.listeners = listeners;
    this.time = settings.time();
    this.wakeup = wakeup;
    this.closed = closed;
  }

  /**
   * Takes the fencing token on the lease's session: the term, not announced yet. A round trip that
   * starts here is the term's first proof of ownership.
   *
   * @throws AdvisoryLockException if the token could not be taken; the lease is closed then
   */
  static LeaderTerm begin(
      TermLease lease, long number, LoopSettings settings, Listeners listeners) {
    TimeSource time = settings.time();
    long proofStart = time.nanoTime();
    long proofWall = time.wallMillis();
    LockKey key = settings.lock().key();
    String candidateId = settings.lock().candidateId();
    FencingToken token;
    try {
      token = lease.fencingToken();
    } catch (SQLException e) {
      lease.close();
      throw new AdvisoryLockException(
          "Taking the fencing token failed (SQLState " + e.getSQLState() + "); lock released",
          key,
          candidateId,
          e);
    } catch (AdvisoryLockException e) {
      lease.close();
      throw e;
    }
    Term t = new Term(number, key, candidateId, time.now(), token, lease.backendPid());
    return new LeaderTerm(
        t, lease, settings, listeners, Thread.currentThread(), proofStart, proofWall);
  }

  /**
   * Announces the term, then leads until it ends; returns once its end is finished (listeners told,
   * lock released). A loop closed before the announcement releases the lock and tells nobody.
   *
   * @param attemptTook how long the attempt that won the lock took, for {@code onAttempt}
   */
  LossReason lead(LeaderTask task, Duration attemptTook) {
    if (closed.getAsBoolean()) {
      term.end(LossReason.CLOSED, null); // nobody heard of it: no listeners, just the lock
      return LossReason.CLOSED;
    }
    Term t = term.term();
    listeners.attempt(AttemptResult.ACQUIRED, attemptTook, null);
    LOG.info(
        "{} Leadership acquired: term {}, fencing token {}, backend pid {}, database {}",
        settings.context(),
        t.number(),
        t.fencingToken(),
        t.backendPid(),
        term.lease.database());
    listeners.acquired(term);
    TermWatchdog watchdog = TermWatchdog.start(term, term.term().candidateId());
    try {
      while (refresh(task, watchdog)) {
        if (!idle(time.nanoTime() + settings.refreshInterval().toNanos())) {
          break;
        }
      }
    } finally {
      if (!term.ended()) {
        term.end(LossReason.CLOSED, null);
      }
      term.finish();
      if (!term.awaitFinished(settings.closeTimeout())) {
        LOG.warn(
            "{} A listener has been in onLost for over {}",
            settings.context(),
            settings.closeTimeout());
      }
      watchdog.stop();
    }
    return term.reason();
  }

  int refreshes() {
    return refreshes;
  }

  /** Runs one refresh; false if the term ended. */
  private boolean refresh(LeaderTask task, TermWatchdog watchdog) {
    if (closed.getAsBoolean()) {
      term.end(LossReason.CLOSED, null);
      return false;
    }
    if (!term.isLeader()) {
      // E.g. resumed after a pause longer than the deadline: fence before any leader work.
      term.fence(LossReason.SELF_FENCED, term.fence.timeout(settings.bounds()));
      return false;
    }
    if (!term.enterTask()) {
      return false;
    }
    watchdog.wake();
    long start = time.nanoTime();
    Throwable failure = null;
    try {
      task.refresh(term);
    } catch (Throwable t) {
      failure = t;
    } finally {
      term.leaveTask();
    }
    Duration took = Duration.ofNanos(time.nanoTime() - start);
    term.afterTask();
    if (term.ended()) {
      return false; // fenced, timed out, lost or closed while the refresh ran
    }
    if (failure != null) {
      if (closed.getAsBoolean() || Thread.currentThread().isInterrupted()) {
        Thread.currentThread().interrupt();
        term.end(LossReason.CLOSED, null); // a stop request from the caller
        return false;
      }
      LOG.warn("{} Refresh of term {} failed", settings.context(), term.term().number(), failure);
      listeners.refreshed(term, took, failure);
      term.end(
          Diagnostics.isSessionLost(Diagnostics.sqlState(failure))
              ? LossReason.SESSION_LOST
              : LossReason.REFRESH_FAILED,
          failure);
      return false;
    }
    refreshes++;
    LOG.debug("{} Refresh of term {} took {}", settings.context(), term.term().number(), took);
    listeners.refreshed(term, took, null);
    return true;
  }

  /** Heartbeats and waits until {@code nextRefresh}; false if the term ended. */
  private boolean idle(long nextRefresh) {
    long heartbeat = settings.heartbeatInterval().toNanos();
    while (!term.ended()) {
      if (closed.getAsBoolean() || Thread.currentThread().isInterrupted()) {
        term.end(LossReason.CLOSED, null);
        return false;
      }
      long now = time.nanoTime();
      long nextBeat = term.fence.lastProofStart() + heartbeat;
      if (now - nextBeat >= 0) {
        try {
          term.proveLeader();
        } catch (LeadershipLostException e) {
          return false;
        }
        continue;
      }
      if (now - nextRefresh >= 0) {
        return true;
      }
      long waitNanos = Math.min(nextBeat, nextRefresh) - now;
      if (!waitOnSession(waitNanos)) {
        return false;
      }
    }
    return false;
  }

  /** Waits on the session's socket (or, if it cannot, on the loop's wakeup); false if it ended. */
  private boolean waitOnSession(long nanos) {
    if (!time.simulated()) {
      try {
        int millis = (int) Math.max(1, Math.min(Integer.MAX_VALUE, TimeSource.millis(nanos)));
        if (term.lease.awaitSessionEvent(millis)) {
          return true;
        }
      } catch (SQLException e) {
        if (!term.ended()) {
          LOG.debug("{} Session ended while waiting: {}", settings.context(), e.toString());
          term.end(closed.getAsBoolean() ? LossReason.CLOSED : LossReason.SESSION_LOST, e);
        }
        return false;
      }
    }
    wakeup.await(nanos, term::ended);
    return true;
  }
}
