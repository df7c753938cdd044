package dev.retsu.lock;

/**
 * The leader's work: called once as soon as the lock is acquired, then every refresh interval while
 * leading, always on the thread that runs the loop.
 */
@FunctionalInterface
public interface LeaderTask {

  /**
   * Does one round of leader work. Use {@link LeaderContext#connection()} for database work, and
   * check {@link LeaderContext#ensureLeader()} before side effects outside the database. Throwing
   * ends the term ({@link LossReason#REFRESH_FAILED}).
   *
   * @param context the term's context
   * @throws Exception to end the term
   */
  void refresh(LeaderContext context) throws Exception;
}
