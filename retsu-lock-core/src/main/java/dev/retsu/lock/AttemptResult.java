package dev.retsu.lock;

/** The outcome of one standby attempt to take the lock. */
public enum AttemptResult {
  /** The lock was taken; a term starts. */
  ACQUIRED,
  /** Another session holds the lock. */
  HELD_ELSEWHERE,
  /** The attempt failed: the database could not be reached, or refused. */
  ERROR
}
