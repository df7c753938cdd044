package dev.retsu.lock.quarkus;

import dev.retsu.lock.Term;
import java.util.Objects;

/**
 * A CDI event: this instance became the leader, or a group member took a key. Fired synchronously
 * on the leader's loop thread (the group's) when a term starts, before its first refresh, so
 * {@code @LeaderOnly} work may not run yet. An observer that throws is logged at WARN and does not
 * end the term.
 *
 * @param leader the leader's name under {@code retsu.lock.leaders}, or the group's under {@code
 *     retsu.lock.groups} (then {@code term.key()} is the key; no name is both)
 * @param term the term that started
 */
public record LeadershipGranted(String leader, Term term) {

  /**
   * An event.
   *
   * @param leader not null
   * @param term not null
   */
  public LeadershipGranted {
    Objects.requireNonNull(leader, "leader");
    Objects.requireNonNull(term, "term");
  }
}
