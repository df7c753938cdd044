package dev.retsu.lock.internal.session;

import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.UnsafeSessionException;

/**
 * Each refusal of an unsafe session, written once: a hot standby, and a backend shared between
 * clients (a transaction-mode pooler). Thread-safe (stateless).
 */
public final class Refusals {

  private Refusals() {}

  public static UnsafeSessionException hotStandby(LockKey key, String candidateId) {
    return new UnsafeSessionException(
        LossReason.HOT_STANDBY_DETECTED,
        "The server is a hot standby (pg_is_in_recovery() = true): advisory locks there do not"
            + " exclude holders on the primary. Connect to the primary.",
        key,
        candidateId);
  }

  /**
   * A backend that already held the key, or whose pid changed between two statements.
   *
   * @param what what was seen, e.g. "Backend 42 already holds this lock before we took it"
   */
  public static UnsafeSessionException sharedBackend(String what, LockKey key, String candidateId) {
    return new UnsafeSessionException(
        LossReason.POOLER_DETECTED,
        what
            + ": the backend is shared between clients, as behind a transaction-mode pooler such"
            + " as PgBouncer, so a session lock cannot give mutual exclusion. Connect directly or"
            + " through a session-mode pooler.",
        key,
        candidateId);
  }

  public static UnsafeSessionException alreadyHeld(int pid, LockKey key, String candidateId) {
    return sharedBackend(
        "Backend " + pid + " already holds this lock before we took it", key, candidateId);
  }

  public static UnsafeSessionException pidChanged(
      int from, int to, LockKey key, String candidateId) {
    return sharedBackend(
        "The backend changed between two statements (pid " + from + " then " + to + ")",
        key,
        candidateId);
  }
}
