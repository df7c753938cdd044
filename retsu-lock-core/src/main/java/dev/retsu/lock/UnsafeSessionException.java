package dev.retsu.lock;

/**
 * The session cannot give mutual exclusion, so retsu-lock refuses to lead on it: the server is a
 * hot standby (advisory locks there do not exclude holders on the primary), or a transaction-mode
 * pooler moves statements between backends. {@link #reason()} is {@link
 * LossReason#STANDBY_DETECTED} or {@link LossReason#POOLER_DETECTED}. Retrying does not help; point
 * the candidate at the primary, directly or through a session-mode pool.
 */
public class UnsafeSessionException extends LeadershipLostException {

  private static final long serialVersionUID = 1L;

  /**
   * Creates an exception.
   *
   * @param reason {@link LossReason#STANDBY_DETECTED} or {@link LossReason#POOLER_DETECTED}
   * @param message details
   * @param key the lock key
   * @param candidateId the candidate
   */
  public UnsafeSessionException(
      LossReason reason, String message, LockKey key, String candidateId) {
    super(reason, message, key, candidateId, null);
  }
}
