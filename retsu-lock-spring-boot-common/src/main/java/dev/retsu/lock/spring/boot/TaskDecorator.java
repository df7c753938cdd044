package dev.retsu.lock.spring.boot;

import dev.retsu.lock.LeaderTask;

/** Wraps each leader's task, as the observation support does (one observation per refresh). */
@FunctionalInterface
interface TaskDecorator {

  /**
   * Wraps a task.
   *
   * @param leader the leader's name
   * @param task the task
   * @return the wrapped task
   */
  LeaderTask decorate(String leader, LeaderTask task);
}
