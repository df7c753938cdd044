package dev.retsu.lock.internal.term;

import dev.retsu.lock.AttemptResult;
import dev.retsu.lock.LeaderChange;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The listener rules of every recipe, written once: calls are serialised per loop or group (never
 * two at once, whatever thread makes them); a listener that throws is logged at WARN and never
 * breaks anything; a term's calls keep their order: {@code onAcquired} is delivered only while the
 * term is live and returns before anything else about it, and nothing about a term follows its
 * {@code onLost}, which comes exactly once and only after {@code onAcquired}. Thread-safe.
 */
public final class TermListeners {

  private static final Logger LOG = LoggerFactory.getLogger(TermListeners.class);

  private final List<LeaderListener> listeners;
  private final String context;
  private final ReentrantLock order = new ReentrantLock();

  /**
   * Listeners of one loop or group.
   *
   * @param listeners the builder's, in order
   * @param context the log prefix
   */
  public TermListeners(List<LeaderListener> listeners, String context) {
    this.listeners = new CopyOnWriteArrayList<>(listeners);
    this.context = context;
  }

  /** Adds one that hears what happens from now on. */
  public void add(LeaderListener listener) {
    listeners.add(Objects.requireNonNull(listener, "listener"));
  }

  /** Removes one; true if it was there. */
  public boolean remove(LeaderListener listener) {
    return listeners.remove(listener);
  }

  /**
   * A call on one listener, its arguments passed in rather than captured: each is one constant
   * below, linked when this class initialises (a standby's warm-up does that), so a takeover links
   * no lambda between the grant and {@code onAcquired}.
   */
  @FunctionalInterface
  interface Call<A, B, C> {
    void on(LeaderListener listener, A a, B b, C c);
  }

  static final Call<AttemptResult, Duration, Throwable> ON_ATTEMPT = LeaderListener::onAttempt;
  static final Call<Term, Void, Void> ON_ACQUIRED = (l, term, none, none2) -> l.onAcquired(term);
  static final Call<Term, Duration, Void> ON_REFRESH_SUCCEEDED =
      (l, term, took, none) -> l.onRefreshSucceeded(term, took);
  static final Call<Term, Duration, Throwable> ON_REFRESH_FAILED = LeaderListener::onRefreshFailed;
  static final Call<Term, LossReason, Throwable> ON_LOST = LeaderListener::onLost;
  static final Call<LeaderChange, Void, Void> ON_LEADER_CHANGED =
      (l, change, none, none2) -> l.onLeaderChanged(change);

  /** A change of a key's leader, from the recipe's {@code LeaderWatch}. */
  public void leaderChanged(LeaderChange change) {
    each("onLeaderChanged", ON_LEADER_CHANGED, change, null, null);
  }

  /** One standby attempt finished (loops only). */
  public void attempt(AttemptResult result, Duration took, Throwable error) {
    each("onAttempt", ON_ATTEMPT, result, took, error);
  }

  /** Delivers {@code onAcquired} unless the term already ended; marks it announced. */
  void acquired(TermState term) {
    order.lock();
    try {
      if (!term.ended()) {
        each("onAcquired", ON_ACQUIRED, term.term(), null, null);
        term.markAnnounced();
      }
    } finally {
      order.unlock();
    }
  }

  /** A refresh outcome: never after {@code onLost}, a success only while the term is live. */
  void refreshed(TermState term, Duration took, Throwable error) {
    order.lock();
    try {
      if (!term.announced() || term.lostDelivered() || (error == null && term.ended())) {
        return;
      }
      if (error == null) {
        each("onRefreshSucceeded", ON_REFRESH_SUCCEEDED, term.term(), took, null);
      } else {
        each("onRefreshFailed", ON_REFRESH_FAILED, term.term(), took, error);
      }
    } finally {
      order.unlock();
    }
  }

  /** Delivers {@code onLost} once, only for an announced term; true for the call that did. */
  boolean lost(TermState term) {
    order.lock();
    try {
      if (!term.announced() || term.lostDelivered()) {
        return false;
      }
      term.markLostDelivered();
      each("onLost", ON_LOST, term.term(), term.reason(), term.cause());
      return true;
    } finally {
      order.unlock();
    }
  }

  private <A, B, C> void each(String method, Call<A, B, C> call, A a, B b, C c) {
    order.lock();
    try {
      for (LeaderListener l : listeners) {
        try {
          call.on(l, a, b, c);
        } catch (RuntimeException | LinkageError e) {
          LOG.warn("{} Listener {}.{} threw; ignored", context, l.getClass().getName(), method, e);
        }
      }
    } finally {
      order.unlock();
    }
  }
}
