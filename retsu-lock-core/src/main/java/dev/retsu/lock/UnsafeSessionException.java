package dev.retsu.lock;

import java.util.Objects;

/**
 * The session cannot give mutual exclusion: the server is a PostgreSQL hot standby ({@link
 * LossReason#HOT_STANDBY_DETECTED}) or a transaction-mode pooler shares backends between clients
 * ({@link LossReason#POOLER_DETECTED}). Thrown by acquisition before any leadership existed, and
 * the reason a term ends when it is found later.
 */
public class UnsafeSessionException extends AdvisoryLockException {

  private static final long serialVersionUID = 1L;

  private final LossReason reason;

  /**
   * Creates the exception.
   *
   * @param reason {@link LossReason#HOT_STANDBY_DETECTED} or {@link LossReason#POOLER_DETECTED}
   * @param message what was seen
   * @param key the lock key
   * @param candidateId the candidate
   */
  public UnsafeSessionException(
      LossReason reason, String message, LockKey key, String candidateId) {
    super(Objects.requireNonNull(reason, "reason") + ": " + message, key, candidateId, null);
    this.reason = reason;
  }

  /**
   * Returns why the session is unsafe.
   *
   * @return the reason
   */
  public LossReason reason() {
    return reason;
  }
}
