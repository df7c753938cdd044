package dev.retsu.lock.spring.boot;

import dev.retsu.lock.Term;
import org.springframework.context.ApplicationEvent;

/**
 * A change of leadership of one named leader, published to the application context on the thread
 * that made it (the leader's loop thread, the thread stopping the context, or the loop's watchdog),
 * synchronously: listeners run before the loop goes on, so keep them short. The source is the
 * {@link RetsuLeader}.
 */
public abstract class LeadershipEvent extends ApplicationEvent {

  private static final long serialVersionUID = 1L;

  private final transient Term term;

  LeadershipEvent(RetsuLeader leader, Term term) {
    super(leader);
    this.term = term;
  }

  /**
   * Returns the leader.
   *
   * @return the leader whose leadership changed
   */
  public RetsuLeader getLeader() {
    return (RetsuLeader) getSource();
  }

  /**
   * Returns the leader's name under {@code retsu.lock.leaders}.
   *
   * @return the name
   */
  public String getLeaderName() {
    return getLeader().name();
  }

  /**
   * Returns the term that started or ended.
   *
   * @return the term
   */
  public Term getTerm() {
    return term;
  }
}
