package dev.retsu.lock;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Listener fan-out of a {@link LeaderGroup}, with the same rules as a loop's: calls are serialised
 * per group (never two at once, whatever thread makes them), a listener that throws is logged at
 * WARN and ignored, {@code onAcquired} of a key's term returns before anything else about it is
 * delivered, and nothing about a term follows its {@code onLost}. Thread-safe.
 */
final class GroupListeners {

  private static final Logger LOG = LoggerFactory.getLogger(GroupListeners.class);

  private final List<LeaderListener> listeners;
  private final String context;
  private final ReentrantLock order = new ReentrantLock();

  GroupListeners(List<LeaderListener> listeners, String context) {
    this.listeners = new CopyOnWriteArrayList<>(listeners);
    this.context = context;
  }

  void add(LeaderListener listener) {
    listeners.add(Objects.requireNonNull(listener, "listener"));
  }

  boolean remove(LeaderListener listener) {
    return listeners.remove(listener);
  }

  /** Delivers {@code onAcquired} unless the term already ended; marks it announced. */
  void acquired(KeyTerm term) {
    order.lock();
    try {
      if (term.ended()) {
        return;
      }
      each("onAcquired", l -> l.onAcquired(term.term()));
      term.announced = true;
    } finally {
      order.unlock();
    }
  }

  void refreshed(KeyTerm term, Duration took, Throwable error) {
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

  /** Delivers {@code onLost} once, only for an announced term. */
  void lost(KeyTerm term) {
    order.lock();
    try {
      if (!term.announced || term.lostDelivered) {
        return;
      }
      term.lostDelivered = true;
      each("onLost", l -> l.onLost(term.term(), term.reason(), term.cause()));
    } finally {
      order.unlock();
    }
  }

  private void each(String method, Listeners.Call call) {
    for (LeaderListener l : listeners) {
      try {
        call.on(l);
      } catch (RuntimeException | LinkageError e) {
        LOG.warn("{} Listener {}.{} threw; ignored", context, l.getClass().getName(), method, e);
      }
    }
  }
}
