package dev.retsu.lock;

/** Why a lease or a term ended. */
public enum LossReason {
  /** Closed on purpose: the lease or loop was closed, or the thread interrupted. */
  CLOSED,
  /**
   * Handed over on purpose: {@code LeaderLoop.yield}, {@code LeaderGroup.yield}, or a non-preferred
   * leader that found a preferred candidate waiting. Ended in the graceful order (work stopped,
   * {@code onLost}, a {@code released} notice, then the release); the candidate stays one.
   */
  YIELDED,
  /** A refresh (one run of the leader task) threw. */
  REFRESH_FAILED,
  /**
   * A refresh ran longer than {@code refreshTimeout}; it was interrupted and its session aborted.
   */
  REFRESH_TIMED_OUT,
  /** The database session ended: terminated, server restart or crash, connection broken. */
  SESSION_LOST,
  /** The session is alive but no longer holds the lock (someone unlocked it). */
  LOCK_NOT_HELD,
  /**
   * The leader could not prove its session alive before its self-fencing deadline, so it stopped
   * before the server could hand the lock to anyone else.
   */
  SELF_FENCED,
  /**
   * The server is a PostgreSQL hot standby (a read replica), where advisory locks do not exclude
   * the primary's holders.
   */
  HOT_STANDBY_DETECTED,
  /**
   * The backend is shared between clients or changed between statements: a transaction-mode pooler
   * (PgBouncer) is in between.
   */
  POOLER_DETECTED
}
