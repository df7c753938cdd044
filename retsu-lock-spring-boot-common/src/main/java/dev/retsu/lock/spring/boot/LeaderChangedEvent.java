package dev.retsu.lock.spring.boot;

import dev.retsu.lock.FencingToken;
import dev.retsu.lock.LeaderChange;
import dev.retsu.lock.LeaderInfo;
import dev.retsu.lock.LockKey;
import java.util.Optional;
import org.springframework.context.ApplicationEvent;

/**
 * One change of a key's leader, as the context's {@code LeaderWatch} saw it ({@code
 * retsu.lock.watch.enabled=true}): published on every replica, leader and standbys alike, for every
 * named leader's key and every group key, per key in the order the terms started, never the same
 * leader twice in a row. The first event of a key is the watch's read of where things stand ({@link
 * LeaderChange.Cause#READ}).
 *
 * <p>Published by the context's one event thread {@code retsu-lock-leader-events}, one event at a
 * time for the whole context: the watch's thread only hands the change over, so a slow listener
 * delays the events after it, never the watch, a loop or a group. The source is the {@link
 * RetsuLeader} or the {@link RetsuLeaderGroup} whose key changed. Immutable.
 */
public final class LeaderChangedEvent extends ApplicationEvent {

  private static final long serialVersionUID = 1L;

  private final String name;
  private final String keyName;
  private final String candidateId;
  private final transient LeaderChange change;

  LeaderChangedEvent(
      Object source, String name, String keyName, String candidateId, LeaderChange change) {
    super(source);
    this.name = name;
    this.keyName = keyName;
    this.candidateId = candidateId;
    this.change = change;
  }

  /**
   * Returns the name of the leader (under {@code retsu.lock.leaders}) or group (under {@code
   * retsu.lock.groups}) whose key changed.
   *
   * @return the name
   */
  public String getName() {
    return name;
  }

  /**
   * Returns the key's name in its group.
   *
   * @return the key's name, or empty for a named leader
   */
  public Optional<String> getKeyName() {
    return Optional.ofNullable(keyName);
  }

  /**
   * Returns the change as the watch delivered it: the key, the new leader or nobody, the cause and
   * when it was seen.
   *
   * @return the change
   */
  public LeaderChange getChange() {
    return change;
  }

  /**
   * Returns the key.
   *
   * @return the key
   */
  public LockKey getKey() {
    return change.key();
  }

  /**
   * Returns the new leader.
   *
   * @return the new leader, or empty when nobody holds the key
   */
  public Optional<LeaderInfo> getLeader() {
    return change.leader();
  }

  /**
   * Returns the new term's fencing token.
   *
   * @return the token, or empty when nobody holds the key (or the holder took none)
   */
  public Optional<FencingToken> getToken() {
    return change.leader().flatMap(LeaderInfo::token);
  }

  /**
   * Returns whether the new leader is this instance (its candidate id is this instance's). Never
   * true for a {@linkplain LeaderInfo#foreign() foreign} holder (a session outside the candidates'
   * role), whatever its session's name claims.
   *
   * @return true when this instance leads the key now
   */
  public boolean isThisInstance() {
    return change
        .leader()
        .map(l -> !l.foreign() && l.candidateId().equals(candidateId))
        .orElse(false);
  }

  /**
   * Returns whether the key is held by a session outside the candidates' role ({@link
   * LeaderInfo#foreign()}): no candidate leads, and none can until that session lets go.
   *
   * @return true when a foreign session holds the key now
   */
  public boolean isForeign() {
    return change.leader().map(LeaderInfo::foreign).orElse(false);
  }

  @Override
  public String toString() {
    return "LeaderChangedEvent{"
        + name
        + (keyName == null ? "" : "/" + keyName)
        + ", "
        + change.cause()
        + ", "
        + change
            .leader()
            .map(l -> (l.foreign() ? "foreign session" : l.candidateId()) + " pid " + l.pid())
            .orElse("nobody")
        + "}";
  }
}
