/**
 * Micrometer metrics for retsu-lock. {@link dev.retsu.lock.micrometer.LeaderMetrics} exports the
 * leadership of one candidate on every replica; {@link dev.retsu.lock.micrometer.QueueStateMetrics}
 * exports queue-state gauges from the current leader only, inside a series budget. Both are built
 * from a {@link dev.retsu.lock.LeaderLoop} and subscribe to its events when they are bound; core
 * knows nothing of Micrometer. Meter names are in {@link dev.retsu.lock.micrometer.Names}.
 */
package dev.retsu.lock.micrometer;
