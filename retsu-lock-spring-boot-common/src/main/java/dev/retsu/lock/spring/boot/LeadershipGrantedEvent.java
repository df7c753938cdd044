package dev.retsu.lock.spring.boot;

import dev.retsu.lock.Term;

/**
 * This instance became the leader: published when a term starts, before its first refresh (core's
 * {@code onAcquired}).
 */
public final class LeadershipGrantedEvent extends LeadershipEvent {

  private static final long serialVersionUID = 1L;

  LeadershipGrantedEvent(RetsuLeader leader, Term term) {
    super(leader, term);
  }

  @Override
  public String toString() {
    return "LeadershipGrantedEvent{" + getLeaderName() + ", term " + getTerm().number() + "}";
  }
}
