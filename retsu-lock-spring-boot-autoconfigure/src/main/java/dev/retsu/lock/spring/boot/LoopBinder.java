package dev.retsu.lock.spring.boot;

import dev.retsu.lock.LeaderLoop;

/** Binds something (metrics) to each leader's loop when it is built; closed when leaders close. */
@FunctionalInterface
interface LoopBinder {

  /**
   * Binds to a loop.
   *
   * @param leader the leader's name
   * @param loop its loop, not started yet
   * @return what undoes the binding
   */
  Runnable bind(String leader, LeaderLoop loop);
}
