package dev.retsu.lock;

/** How a standby waits for the lock. */
public enum TakeoverMode {
  /**
   * Try the lock every retry interval, holding no connection in between. Takeover waits for the
   * next attempt (up to the retry interval). The default, and the Retsu collector's behaviour.
   */
  POLL,
  /**
   * Keep one connection blocked in {@code pg_advisory_lock} under {@code lock_timeout} (re-armed in
   * a loop), so PostgreSQL hands the lock over the moment the old session ends: takeover costs
   * about one round trip. Costs one connection per standby. The waiting session carries the same
   * server-side bounds as a leader's, so a waiter whose client vanished and that is then granted
   * the lock loses it again within that bound.
   */
  WAIT
}
