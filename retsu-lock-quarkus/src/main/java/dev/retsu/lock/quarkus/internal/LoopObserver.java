package dev.retsu.lock.quarkus.internal;

import dev.retsu.lock.LeaderGroup;
import dev.retsu.lock.LeaderLoop;

/**
 * A bean told of each leader's loop and each group before it starts and after it closed (the meters
 * are one).
 */
public interface LoopObserver {

  /**
   * A loop is about to start.
   *
   * @param name the leader's name
   * @param loop its loop
   */
  void started(String name, LeaderLoop loop);

  /**
   * A loop closed.
   *
   * @param name the leader's name
   * @param loop its loop
   */
  void stopped(String name, LeaderLoop loop);

  /**
   * A group is about to start.
   *
   * @param name the group's name
   * @param group the group
   */
  void groupStarted(String name, LeaderGroup group);

  /**
   * A group closed.
   *
   * @param name the group's name
   * @param group the group
   */
  void groupStopped(String name, LeaderGroup group);
}
