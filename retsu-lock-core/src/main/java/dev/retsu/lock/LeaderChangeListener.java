package dev.retsu.lock;

/**
 * Hears a key's leader changes from a {@link LeaderWatch}: per key in the order the terms started
 * (their fencing tokens' order), never the same leader twice in a row. Calls come from the watch's
 * thread ({@code retsu-lock-watch-<name>}), one at a time for the whole watch; the leader may have
 * changed again behind the listener's back, so treat each call as news about the moment it was
 * seen. A listener that throws is logged at WARN and never breaks the watch. Keep it fast: every
 * key of the watch waits for it.
 */
@FunctionalInterface
public interface LeaderChangeListener {

  /**
   * The key's leader changed.
   *
   * @param change the new leader, or nobody
   */
  void onLeaderChanged(LeaderChange change);
}
