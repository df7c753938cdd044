package dev.retsu.lock.quarkus;

import dev.retsu.lock.LeaderContext;

/** Work that runs only on the leader, with the term's context ({@link RetsuLeader#runIfLeader}). */
@FunctionalInterface
public interface LeaderWork {

  /**
   * Runs the work.
   *
   * @param context the term's context; its connection is the session that holds the lock
   * @throws Exception what the work throws; it reaches the caller of {@link
   *     RetsuLeader#runIfLeader}
   */
  void run(LeaderContext context) throws Exception;
}
