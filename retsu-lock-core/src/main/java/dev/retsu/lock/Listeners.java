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

  /** A call made on one listener. */
  @FunctionalInterface
  interface Call {
    void on(LeaderListener listener);
  }

  void attempt(AttemptResult result, Duration took, Throwable error) {
    each("onAttempt", l -> l.onAttempt(result, took, error));
  }

  /** Delivers {@code onAcquired}; the term is told it was announced only after it returned. */
  void acquired(LeaderTerm term) {
    order.lock();
    try {
      each("onAcquired", l -> l.onAcquired(term.term()));
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
        each("onRefreshSucceeded", l -> l.onRefreshSucceeded(term.term(), took));
      } else {
        each("onRefreshFailed", l -> l.onRefreshFailed(term.term(), took, error));
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
      each("onLost", l -> l.onLost(term.term(), reason, cause));
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
  void each(String method, Call call) {
    order.lock();
    try {
      for (LeaderListener l : listeners) {
        try {
          call.on(l);
        } catch (RuntimeException | LinkageError e) {
          LOG.warn("{} Listener {}.{} threw; ignored", context, l.getClass().getName(), method, e);
        }
      }
    } finally {
      order.unlock();
    }
  }
}
