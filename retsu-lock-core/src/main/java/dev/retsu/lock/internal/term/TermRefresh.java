package dev.retsu.lock.internal.term;

import dev.retsu.lock.LeaderTask;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.internal.Diagnostics;
import dev.retsu.lock.internal.TimeSource;
import dev.retsu.lock.internal.session.Session;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One term's refresh on the {@link SessionWorker}'s thread, for every recipe: the self-fencing
 * check first, a deferred announcement, then the task under {@code refreshTimeout} (the watchdog
 * holds the deadline), then the session put back in autocommit and a due ownership proof; the
 * outcome reaches the listeners, and a failure ends the term, or the whole session when the
 * failure's SQLState says the session is lost. A part of the {@link SessionWorker}: these run on
 * the worker's thread only; what runs is published through {@link RunningTask} for the watchdog and
 * the threads that end terms.
 */
final class TermRefresh {

  /** The worker's logger: these lines are the worker's, as they always were. */
  private static final Logger LOG = LoggerFactory.getLogger(SessionWorker.class);

  /**
   * A constant, linked at class initialisation (the warm-up), not at a takeover's first refresh.
   */
  private static final Comparator<TermState> BY_NEXT_REFRESH =
      Comparator.comparingLong(TermState::nextRefresh);

  private final Session session;
  private final TermOptions options;
  private final TermListeners listeners;
  private final Map<LockKey, TermState> terms;
  private final BooleanSupplier closing;
  private final RunningTask running;
  private final TermEnd ends;

  TermRefresh(WorkerParts parts, TermEnd ends) {
    this.session = parts.session();
    this.options = parts.options();
    this.listeners = parts.listeners();
    this.terms = parts.terms();
    this.closing = parts.closing();
    this.running = parts.task();
    this.ends = ends;
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
      if (ends.endReason() != null || closing.getAsBoolean()) {
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
      ends.selfFence(); // e.g. resumed after a pause longer than the deadline: before any leader
      // work
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
    running.start(t, start + options.refreshTimeout().toNanos());
    try {
      task.refresh(t);
    } catch (Throwable e) {
      failure = e;
    } finally {
      running.stop();
    }
    Duration took = Duration.ofNanos(time.nanoTime() - start);
    afterTask();
    if (t.ended() || ends.endReason() != null) {
      return; // timed out, found unlocked, lost or closed while it ran: finished below
    }
    if (failure != null) {
      if (closing.getAsBoolean() || Thread.currentThread().isInterrupted()) {
        ends.endTerm(t, LossReason.CLOSED, null); // a stop request from the caller
        return;
      }
      LOG.warn("{} Refresh of term {} failed", session.id().context(), t.term().number(), failure);
      listeners.refreshed(t, took, failure);
      if (Diagnostics.isSessionLost(Diagnostics.sqlState(failure))) {
        ends.endSession(LossReason.SESSION_LOST, failure, false);
      } else {
        ends.endTerm(t, LossReason.REFRESH_FAILED, failure);
      }
      return;
    }
    t.refreshed();
    LOG.debug("{} Refresh of term {} took {}", session.id().context(), t.term().number(), took);
    listeners.refreshed(t, took, null);
    t.nextRefreshAt(time.nanoTime() + options.refreshInterval().toNanos());
  }

  /** After a refresh: autocommit back on, nothing left open; an ownership proof if one is due. */
  private void afterTask() {
    if (ends.endReason() != null || !session.isOpen()) {
      return;
    }
    try {
      if (session.io().repairAutocommit()) {
        LOG.warn(
            "{} A refresh left autocommit off or a transaction open; rolled back what was not"
                + " committed and turned autocommit back on, so the session stays observable"
                + " between refreshes",
            session.id().context());
      }
    } catch (SQLException e) {
      ends.endSession(LossReason.SESSION_LOST, e, false);
      return;
    }
    if (session.proofs().ownershipDue()) {
      ends.prove();
    }
  }
}
