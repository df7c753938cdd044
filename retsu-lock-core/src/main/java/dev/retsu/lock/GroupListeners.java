package dev.retsu.lock;

import java.time.Duration;

/**
 * The per-key term rules of a {@link LeaderGroup}'s listener calls, on top of the loop's fan-out
 * ({@link Listeners}: serialised per group, a throwing listener logged at WARN and ignored): {@code
 * onAcquired} of a key's term is delivered only while the term is live and returns before anything
 * else about it, and nothing about a term follows its {@code onLost}. Thread-safe.
 */
final class GroupListeners {

  private final Listeners fanOut;

  GroupListeners(Listeners fanOut) {
    this.fanOut = fanOut;
  }

  void add(LeaderListener listener) {
    fanOut.add(listener);
  }

  boolean remove(LeaderListener listener) {
    return fanOut.remove(listener);
  }

  /** Delivers {@code onAcquired} unless the term already ended; marks it announced. */
  void acquired(KeyTerm term) {
    fanOut.serially(
        () -> {
          if (term.ended()) {
            return;
          }
          fanOut.each("onAcquired", Listeners.ON_ACQUIRED, term.term(), null, null);
          term.announced = true;
        });
  }

  void refreshed(KeyTerm term, Duration took, Throwable error) {
    fanOut.serially(
        () -> {
          if (!term.announced || term.lostDelivered || (error == null && term.ended())) {
            return;
          }
          if (error == null) {
            fanOut.each(
                "onRefreshSucceeded", Listeners.ON_REFRESH_SUCCEEDED, term.term(), took, null);
          } else {
            fanOut.each("onRefreshFailed", Listeners.ON_REFRESH_FAILED, term.term(), took, error);
          }
        });
  }

  /** Delivers {@code onLost} once, only for an announced term. */
  void lost(KeyTerm term) {
    fanOut.serially(
        () -> {
          if (!term.announced || term.lostDelivered) {
            return;
          }
          term.lostDelivered = true;
          fanOut.each("onLost", Listeners.ON_LOST, term.term(), term.reason(), term.cause());
        });
  }
}
