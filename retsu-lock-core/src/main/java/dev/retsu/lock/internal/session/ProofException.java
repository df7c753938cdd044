package dev.retsu.lock.internal.session;

import dev.retsu.lock.LossReason;

/**
 * A session that cannot prove what it holds: it ended ({@code SESSION_LOST}, also when the proof
 * could not run and ownership is unknown), its backend is shared or changed ({@code
 * POOLER_DETECTED}), it is a hot standby ({@code HOT_STANDBY_DETECTED}), or it was closed ({@code
 * CLOSED}). The cause keeps the SQLException or the refusal.
 */
public final class ProofException extends Exception {

  private static final long serialVersionUID = 1L;

  private final LossReason reason;

  ProofException(LossReason reason, Throwable cause) {
    super(reason + ": " + cause, cause);
    this.reason = reason;
  }

  /**
   * Why the session cannot prove anything.
   *
   * @return the reason
   */
  public LossReason reason() {
    return reason;
  }
}
