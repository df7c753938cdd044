package dev.retsu.lock;

import java.time.Instant;
import java.util.Objects;
import java.util.Optional;

/**
 * One change of a key's leader, as a {@link LeaderWatch} delivers it: the new leader, or nobody.
 *
 * @param key the key
 * @param leader the new leader, or empty when nobody holds the key
 * @param cause what the watch saw
 * @param seenAt when the watch saw it (this process's wall clock)
 */
public record LeaderChange(LockKey key, Optional<LeaderInfo> leader, Cause cause, Instant seenAt) {

  /** What a watch saw. */
  public enum Cause {
    /**
     * A read of {@code pg_locks}: the watch of this key started, or the watch's session was opened
     * again after it was lost (a server restart), so changes meanwhile may have been missed.
     */
    READ,
    /** A leader's {@code acquired} notice: a new term, within milliseconds of its start. */
    ACQUIRED,
    /** A leader's {@code released} notice: a graceful end, just before the release. */
    RELEASED,
    /**
     * The watch's bounded check found the leader's session gone (a crash, a terminated session, a
     * lost connection: nothing was notified), within {@code checkInterval} of its end.
     */
    ENDED
  }

  /**
   * Validates the components.
   *
   * @param key not null
   * @param leader not null
   * @param cause not null
   * @param seenAt not null
   */
  public LeaderChange {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(leader, "leader");
    Objects.requireNonNull(cause, "cause");
    Objects.requireNonNull(seenAt, "seenAt");
  }
}
