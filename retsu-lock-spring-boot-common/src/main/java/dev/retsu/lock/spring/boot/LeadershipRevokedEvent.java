package dev.retsu.lock.spring.boot;

import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;

/**
 * This instance stopped being the leader: published when a term ends (core's {@code onLost}), after
 * the term's {@code @LeaderOnly} work stopped and before the lock is released, so listeners can
 * stop leader-only components while no other instance leads yet.
 */
public final class LeadershipRevokedEvent extends LeadershipEvent {

  private static final long serialVersionUID = 1L;

  private final LossReason reason;

  LeadershipRevokedEvent(RetsuLeader leader, Term term, LossReason reason) {
    super(leader, term);
    this.reason = reason;
  }

  /**
   * Returns why the term ended.
   *
   * @return the reason; {@code CLOSED} for a graceful stop
   */
  public LossReason getReason() {
    return reason;
  }

  @Override
  public String toString() {
    return "LeadershipRevokedEvent{"
        + getLeaderName()
        + ", term "
        + getTerm().number()
        + ", "
        + reason
        + "}";
  }
}
