package dev.retsu.lock;

import java.util.Objects;

/**
 * This session no longer holds (or can no longer prove that it holds) the lock. The {@link
 * #reason()} says why; for a lost session the cause keeps the SQLState.
 */
public class LeadershipLostException extends AdvisoryLockException {

  private static final long serialVersionUID = 1L;

  private final LossReason reason;

  /**
   * Creates an exception.
   *
   * @param reason why leadership is lost
   * @param message details
   * @param key the lock key
   * @param candidateId the candidate
   * @param cause the cause, may be null
   */
  public LeadershipLostException(
      LossReason reason, String message, LockKey key, String candidateId, Throwable cause) {
    super(Objects.requireNonNull(reason, "reason") + ": " + message, key, candidateId, cause);
    this.reason = reason;
  }

  /**
   * Returns why leadership was lost.
   *
   * @return the reason
   */
  public LossReason reason() {
    return reason;
  }
}
