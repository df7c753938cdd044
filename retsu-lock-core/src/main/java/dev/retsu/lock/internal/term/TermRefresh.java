package dev.retsu.lock.internal.term;

import dev.retsu.lock.LeaderTask;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.internal.Diagnostics;
import dev.retsu.lock.internal.TimeSource;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One term's refresh on the {@link SessionWorker}'s thread, for every recipe: the self-fencing
 * check first, a deferred announcement, then the task under {@code refreshTimeout} (the watchdog
 * holds the deadline), then the session put back in autocommit and a due ownership proof; the
 * outcome reaches the listeners, and a failure ends the term, or the whole session when the
 * failure's SQLState says the session is lost. Thread-safe as {@link SessionWorker}: these run on
 * the worker's thread only.
 */
abstract class TermRefresh extends TermEnd {

  /** The worker's logger: these lines are the worker's, as they always were. */
  private static final Logger LOG = LoggerFactory.getLogger(SessionWorker.class);

  /**
   * A constant, linked at class initialisation (the warm-up), not at a takeover's first refresh.
   */
  private static final Comparator<TermState> BY_NEXT_REFRESH =
      Comparator.comparingLong(TermState::nextRefresh);

  TermRefresh(Parts parts) {
    super(parts);
  }

  /** Refreshes the terms that are due, the longest waiting first, until one ends the session. */
  void refreshDue(LeaderTask task) {
    long now = options.time().nanoTime();
    List<TermState> due = new ArrayList<>();
    for (TermState t : terms.values()) {
      if (!t.ended() && now - t.nextRefresh() >= 0) {
        due.add(t);
      }
    }
    if (due.size() > 1) {
      due.sort(BY_NEXT_REFRESH); // one term (a loop) needs no order, nor the sort's classes
    }
    for (TermState t : due) {
      if (endReason() != null || closing.getAsBoolean()) {
        return;
      }
      if (!t.ended()) {
        refresh(t, task);
      }
    }
  }

  private void refresh(TermState t, LeaderTask task) {
    TimeSource time = options.time();
    if (session.proofs().fence().expired()) {
      selfFence(); // e.g. resumed after a pause longer than the deadline: before any leader work
      return;
    }
    if (t.announceAtFirstRefresh() && !t.announced()) {
      listeners.acquired(t); // a deferred announcement (a loop's lock-delay)
      if (!t.announced()) {
        return; // it ended meanwhile
      }
    }
    long start = time.nanoTime();
    Throwable failure = null;
    taskDeadline = start + options.refreshTimeout().toNanos();
    running = t;
    watchdogWake();
    try {
      task.refresh(t);
    } catch (Throwable e) {
      failure = e;
    } finally {
      running = null;
      taskDeadline = Long.MAX_VALUE;
      clearOwnInterrupt();
    }
    Duration took = Duration.ofNanos(time.nanoTime() - start);
    afterTask();
    if (t.ended() || endReason() != null) {
      return; // timed out, found unlocked, lost or closed while it ran: finished below
    }
    if (failure != null) {
      if (closing.getAsBoolean() || Thread.currentThread().isInterrupted()) {
        endTerm(t, LossReason.CLOSED, null); // a stop request from the caller
        return;
      }
      LOG.warn("{} Refresh of term {} failed", context(t), t.term().number(), failure);
      listeners.refreshed(t, took, failure);
      if (Diagnostics.isSessionLost(Diagnostics.sqlState(failure))) {
        endSession(LossReason.SESSION_LOST, failure, false);
      } else {
        endTerm(t, LossReason.REFRESH_FAILED, failure);
      }
      return;
    }
    t.refreshed();
    LOG.debug("{} Refresh of term {} took {}", context(t), t.term().number(), took);
    listeners.refreshed(t, took, null);
    t.nextRefreshAt(time.nanoTime() + options.refreshInterval().toNanos());
  }

  /** After a refresh: autocommit back on, nothing left open; an ownership proof if one is due. */
  private void afterTask() {
    if (endReason() != null || !session.isOpen()) {
      return;
    }
    try {
      if (session.repairAutocommit()) {
        LOG.warn(
            "{} A refresh left autocommit off or a transaction open; rolled back what was not"
                + " committed and turned autocommit back on, so the session stays observable"
                + " between refreshes",
            session.id().context());
      }
    } catch (SQLException e) {
      endSession(LossReason.SESSION_LOST, e, false);
      return;
    }
    if (session.proofs().ownershipDue()) {
      prove();
    }
  }
}
