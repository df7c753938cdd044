package dev.retsu.lock.quarkus;

import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import java.util.Objects;

/**
 * A CDI event: this instance stopped being the leader, or a group member's term of a key ended.
 * Fired synchronously on the thread that ends the term, after the term's {@code @LeaderOnly} work
 * stopped and, on a graceful end, before the lock is released, so observers can stop leader-only
 * components while no other instance leads yet. An observer that throws is logged at WARN.
 *
 * @param leader the leader's name under {@code retsu.lock.leaders}, or the group's under {@code
 *     retsu.lock.groups} (then {@code term.key()} is the key; no name is both)
 * @param term the term that ended
 * @param reason why it ended; {@code CLOSED} for a graceful stop
 */
public record LeadershipRevoked(String leader, Term term, LossReason reason) {

  /**
   * An event.
   *
   * @param leader not null
   * @param term not null
   * @param reason not null
   */
  public LeadershipRevoked {
    Objects.requireNonNull(leader, "leader");
    Objects.requireNonNull(term, "term");
    Objects.requireNonNull(reason, "reason");
  }
}
