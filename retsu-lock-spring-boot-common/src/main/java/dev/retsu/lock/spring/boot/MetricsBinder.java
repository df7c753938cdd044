package dev.retsu.lock.spring.boot;

import dev.retsu.lock.LeaderGroup;
import dev.retsu.lock.LeaderLoop;

/**
 * Binds metrics to each leader and group when they are built: one implementation, by the metrics
 * auto-configuration when retsu-lock-micrometer and a {@code MeterRegistry} are present. Every
 * method returns what undoes the binding, run when the leaders close.
 */
interface MetricsBinder {

  /**
   * Binds leadership metrics to a loop.
   *
   * @param leader the leader's name, the {@code lock} tag
   * @param loop its loop, not started yet
   * @return what unbinds them
   */
  Runnable bindLoop(String leader, LeaderLoop loop);

  /**
   * Binds group metrics.
   *
   * @param group the group, not started yet
   * @param perKeyBudget the most keys with per-key series
   * @return what unbinds them
   */
  Runnable bindGroup(LeaderGroup group, int perKeyBudget);

  /**
   * Returns the job counters of one leader or group.
   *
   * @param lock the leader's or group's name, the {@code lock} tag
   * @param candidate this instance's candidate id
   * @return the counters; closed when the leaders close
   */
  JobObserver jobs(String lock, String candidate);
}
