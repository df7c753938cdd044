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
    /**
     * A new term, within milliseconds of its start: a leader's {@code acquired} notice made the
     * watch read the key from {@code pg_locks}, and the read showed it (a notice alone is never
     * taken for a fact: any role can send one).
     */
    ACQUIRED,
    /**
     * A graceful end, just before the release: a {@code released} notice that the server shows came
     * from the leader's own session (or a read that such a notice prompted showed nobody).
     */
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
