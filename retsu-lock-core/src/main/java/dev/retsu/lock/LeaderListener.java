package dev.retsu.lock;

import java.time.Duration;

/**
 * Hears what a {@link LeaderLoop} does. Every method has a no-op default.
 *
 * <p>Calls come from the thread running the loop, except {@link #onLost} for a self-fenced or
 * timed-out term, which the loop's watchdog thread ({@code retsu-lock-watchdog-*}) makes at the
 * deadline so that leader-only state stops before the server can release the lock, and {@link
 * #onLost} for a term closed between refreshes, which the thread calling {@code close()} makes
 * before it releases the lock. Calls for one loop never overlap, but state may change behind the
 * listener's back: treat each call as news about the moment it was made. A listener that throws is
 * logged at WARN and never breaks the loop. Keep listeners fast; the loop waits for them.
 */
public interface LeaderListener {

  /** A listener that does nothing. */
  LeaderListener NO_OP = new LeaderListener() {};

  /**
   * One standby attempt finished.
   *
   * @param result what happened
   * @param duration how long the attempt took
   * @param error the failure for {@link AttemptResult#ERROR}, else null
   */
  default void onAttempt(AttemptResult result, Duration duration, Throwable error) {}

  /**
   * A term started: the lock is held and the fencing token taken. Called before the first refresh.
   *
   * @param term the new term
   */
  default void onAcquired(Term term) {}

  /**
   * A refresh finished normally.
   *
   * @param term the term
   * @param duration how long the task ran
   */
  default void onRefreshSucceeded(Term term, Duration duration) {}

  /**
   * A refresh threw or timed out; {@link #onLost} follows.
   *
   * @param term the term
   * @param duration how long the task ran
   * @param error what it threw
   */
  default void onRefreshFailed(Term term, Duration duration, Throwable error) {}

  /**
   * A term ended. Called before the lock is released, so that nothing leader-only outlives the
   * term; exactly once per term.
   *
   * @param term the term that ended
   * @param reason why
   * @param cause the failure, or null for {@link LossReason#CLOSED}
   */
  default void onLost(Term term, LossReason reason, Throwable cause) {}

  /**
   * The key's leader changed, this candidate or another (client-go's {@code OnNewLeader}): heard
   * only by a loop or group built with {@link TermOptionsBuilder#leaderWatch}, from that watch's
   * thread, serialised with this listener's other calls. See {@link LeaderWatch} for the order and
   * the bounds.
   *
   * @param change the new leader, or nobody
   */
  default void onLeaderChanged(LeaderChange change) {}
}
