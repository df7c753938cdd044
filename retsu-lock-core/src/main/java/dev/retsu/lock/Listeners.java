package dev.retsu.lock;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Listener fan-out. Calls are serialised per loop (never two at once, whatever thread makes them),
 * a listener that throws is logged at WARN and never breaks the loop, and a term's calls keep their
 * order: {@code onAcquired} returns before anything else about the term is delivered, and nothing
 * about a term follows its {@code onLost}. Thread-safe.
 */
final class Listeners {

  private static final Logger LOG = LoggerFactory.getLogger(Listeners.class);

  private final List<LeaderListener> listeners;
  private final String context;
  private final ReentrantLock order = new ReentrantLock();

  Listeners(List<LeaderListener> listeners, String context) {
    this.listeners = new CopyOnWriteArrayList<>(listeners);
    this.context = context;
  }

  void add(LeaderListener listener) {
    listeners.add(Objects.requireNonNull(listener, "listener"));
  }

  boolean remove(LeaderListener listener) {
    return listeners.remove(listener);
  }

  /**
   * A call made on one listener, its arguments passed in rather than captured. Each call is one
   * constant below, linked when this class initialises (a standby's warm-up does that), so a
   * takeover does not link a lambda between the grant and {@code onAcquired}: with {@code
   * -Xlog:class+load} in the failover benchmark, the first call of the capturing {@code onAttempt}
   * lambda spun a lambda class and a dozen method-handle classes at the takeover.
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

  void attempt(AttemptResult result, Duration took, Throwable error) {
    each("onAttempt", ON_ATTEMPT, result, took, error);
  }

  /** Delivers {@code onAcquired}; the term is told it was announced only after it returned. */
  void acquired(LeaderTerm term) {
    order.lock();
    try {
      each("onAcquired", ON_ACQUIRED, term.term(), null, null);
      term.announced = true;
    } finally {
      order.unlock();
    }
  }

  /**
   * Delivers a refresh outcome; never after the term's {@code onLost}, and a success only while the
   * term has not ended.
   */
  void refreshed(LeaderTerm term, Duration took, Throwable error) {
    order.lock();
    try {
      if (!term.announced || term.lostDelivered || (error == null && term.ended())) {
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

  /** Delivers {@code onLost} once, and only for a term whose {@code onAcquired} was delivered. */
  void lost(LeaderTerm term, LossReason reason, Throwable cause) {
    order.lock();
    try {
      if (!term.announced || term.lostDelivered) {
        return;
      }
      term.lostDelivered = true;
      each("onLost", ON_LOST, term.term(), reason, cause);
    } finally {
      order.unlock();
    }
  }

  /**
   * Runs {@code work} while holding the order lock, so a check of a term's state and the calls it
   * decides on are one step against every other delivery (re-entrant: {@link #each} inside it).
   */
  void serially(Runnable work) {
    order.lock();
    try {
      work.run();
    } finally {
      order.unlock();
    }
  }

  /** Calls every listener in order, serialised; a listener that throws is logged and skipped. */
  <A, B, C> void each(String method, Call<A, B, C> call, A a, B b, C c) {
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
