package dev.retsu.lock;

import dev.retsu.lock.internal.Checks;
import dev.retsu.lock.internal.session.ServerBounds;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;

/**
 * How fast a leader that vanished, paused or lost its network is replaced, as one value: how often
 * the leader proves its session, when it stops acting without a proof, and when the server ends its
 * session and frees its keys. The five settings are one decision, because each bounds the next: the
 * leader must fence itself (stop acting) before the server can free its keys for a successor.
 *
 * <ul>
 *   <li>{@link #DEFAULT}: a vanished or paused leader is replaced within about 11 seconds, and a
 *       leader rides out stalls of a few seconds;
 *   <li>{@link #FAST}: replaced within about 2 to 3 seconds, at the cost of two heartbeats a second
 *       per leader session and of a hand-over when a round trip stalls for about half a second;
 *   <li>a custom value: start from either and change what you must with the {@code with} methods,
 *       as in {@code FailoverTiming.DEFAULT.withHeartbeatInterval(Duration.ofSeconds(1))}.
 * </ul>
 *
 * <p>Each {@code with} method checks its own value and names it when it is out of range; the rules
 * that tie the values together (heartbeat at most half of the self-fencing deadline, the deadline
 * at least {@link #MIN_FENCING_MARGIN} below the server's bound) are checked when a recipe is
 * built, with a message naming the values. A plain {@code pg_advisory_lock} user needs none of
 * this: these settings are for the recipes ({@link LeaderLoop}, {@link LeaderGroup}). Immutable and
 * thread-safe.
 */
public final class FailoverTiming {

  /** The least gap between the self-fencing deadline and the server-side bound: 1 second. */
  public static final Duration MIN_FENCING_MARGIN = ServerBounds.MIN_FENCING_MARGIN;

  /**
   * The default: heartbeat 2 s, self-fencing deadline 8 s, keepalives 5 s, 2 s, 3 (the server ends
   * a silent session after 11 s), {@code idle_session_timeout} 11 s (a paused leader is released as
   * soon as a vanished one), round trips time out after 10 s.
   */
  public static final FailoverTiming DEFAULT =
      new FailoverTiming(
          Duration.ofSeconds(2),
          Duration.ofSeconds(8),
          Duration.ofSeconds(5),
          Duration.ofSeconds(2),
          3,
          Duration.ofSeconds(11),
          AdvisoryLock.DEFAULT_ROUND_TRIP_TIMEOUT);

  /**
   * The fast preset: a partitioned, paused or vanished leader is replaced within about 2 to 3
   * seconds instead of about 11, with the same guarantee. The server ends the leader's session
   * after 2 seconds of silence (keepalives 1 s, 1 s, 1; {@code tcp_user_timeout} and {@code
   * idle_session_timeout} 2 s), the leader fences itself 1 second after the start of its last
   * successful round trip, and proves its session every 500 ms (round trips time out after 1 s).
   * What it costs: two heartbeats a second per leader session, and a leader whose round trips stall
   * for about half a second (a long GC pause, a slow network, an overloaded server) fences itself
   * and hands over where the default would have ridden it out.
   */
  public static final FailoverTiming FAST =
      new FailoverTiming(
          Duration.ofMillis(500),
          Duration.ofSeconds(1),
          Duration.ofSeconds(1),
          Duration.ofSeconds(1),
          1,
          Duration.ofSeconds(2),
          Duration.ofSeconds(1));

  private final Duration heartbeatInterval;
  private final Duration selfFenceAfter;
  private final Duration keepaliveIdle;
  private final Duration keepaliveInterval;
  private final int keepaliveCount;
  private final Duration idleSessionTimeout;
  private final Duration roundTripTimeout;

  private FailoverTiming(
      Duration heartbeatInterval,
      Duration selfFenceAfter,
      Duration keepaliveIdle,
      Duration keepaliveInterval,
      int keepaliveCount,
      Duration idleSessionTimeout,
      Duration roundTripTimeout) {
    this.heartbeatInterval = heartbeatInterval;
    this.selfFenceAfter = selfFenceAfter;
    this.keepaliveIdle = keepaliveIdle;
    this.keepaliveInterval = keepaliveInterval;
    this.keepaliveCount = keepaliveCount;
    this.idleSessionTimeout = idleSessionTimeout;
    this.roundTripTimeout = roundTripTimeout;
  }

  /**
   * With another heartbeat: how often a leader's session is proven, alive (any round trip counts)
   * when it is otherwise quiet, and that it still holds its keys when user code has used it,
   * however busy the task keeps it. It also bounds how long user SQL that releases a key through a
   * function can go unseen. At most half of the self-fencing deadline.
   *
   * @param interval positive
   * @return the new value
   * @throws IllegalArgumentException if {@code interval} is not positive
   */
  public FailoverTiming withHeartbeatInterval(Duration interval) {
    return new FailoverTiming(
        Checks.positive("heartbeatInterval", interval),
        selfFenceAfter,
        keepaliveIdle,
        keepaliveInterval,
        keepaliveCount,
        idleSessionTimeout,
        roundTripTimeout);
  }

  /**
   * With another self-fencing deadline: a leader stops acting when no round trip on its session has
   * succeeded for this long (measured from the round trip's start, on the monotonic and the wall
   * clock). At least {@link #MIN_FENCING_MARGIN} below the server-side bound.
   *
   * @param deadline positive
   * @return the new value
   * @throws IllegalArgumentException if {@code deadline} is not positive
   */
  public FailoverTiming withSelfFenceAfter(Duration deadline) {
    return new FailoverTiming(
        heartbeatInterval,
        Checks.positive("selfFenceAfter", deadline),
        keepaliveIdle,
        keepaliveInterval,
        keepaliveCount,
        idleSessionTimeout,
        roundTripTimeout);
  }

  /**
   * With other TCP keepalives on a leader's session: PostgreSQL ends it after idle + interval ×
   * count of silence ({@code tcp_user_timeout} is set to the same bound).
   *
   * @param idle {@code tcp_keepalives_idle}, whole seconds 1 to 3600
   * @param interval {@code tcp_keepalives_interval}, whole seconds 1 to 3600
   * @param count {@code tcp_keepalives_count}, 1 to 1000
   * @return the new value
   * @throws IllegalArgumentException if a value is out of its range
   */
  public FailoverTiming withServerKeepalives(Duration idle, Duration interval, int count) {
    return new FailoverTiming(
        heartbeatInterval,
        selfFenceAfter,
        Checks.wholeSeconds("keepaliveIdle", idle),
        Checks.wholeSeconds("keepaliveInterval", interval),
        Checks.within("keepaliveCount", count, 1, 1000),
        idleSessionTimeout,
        roundTripTimeout);
  }

  /**
   * With another {@code idle_session_timeout} (and {@code idle_in_transaction_session_timeout}) on
   * a leader's session: the server ends a leader that is alive but paused after this long; zero
   * turns it off. Heartbeats keep a healthy session from ever idling this long.
   *
   * @param timeout zero or at least 1 second
   * @return the new value
   * @throws IllegalArgumentException if {@code timeout} is negative or under 1 second
   */
  public FailoverTiming withServerIdleSessionTimeout(Duration timeout) {
    return new FailoverTiming(
        heartbeatInterval,
        selfFenceAfter,
        keepaliveIdle,
        keepaliveInterval,
        keepaliveCount,
        Checks.zeroOrAtLeast("idleSessionTimeout", timeout, Duration.ofSeconds(1)),
        roundTripTimeout);
  }

  /**
   * With another network timeout for the library's own round trips.
   *
   * @param timeout positive
   * @return the new value
   * @throws IllegalArgumentException if {@code timeout} is not positive
   */
  public FailoverTiming withRoundTripTimeout(Duration timeout) {
    return new FailoverTiming(
        heartbeatInterval,
        selfFenceAfter,
        keepaliveIdle,
        keepaliveInterval,
        keepaliveCount,
        idleSessionTimeout,
        Checks.positive("roundTripTimeout", timeout));
  }

  /**
   * Returns how often a leader's session is proven.
   *
   * @return the heartbeat interval
   */
  public Duration heartbeatInterval() {
    return heartbeatInterval;
  }

  /**
   * Returns the self-fencing deadline.
   *
   * @return how long after the start of its last successful round trip a leader stops acting
   */
  public Duration selfFenceAfter() {
    return selfFenceAfter;
  }

  /**
   * Returns {@code tcp_keepalives_idle} of a leader's session.
   *
   * @return whole seconds
   */
  public Duration keepaliveIdle() {
    return keepaliveIdle;
  }

  /**
   * Returns {@code tcp_keepalives_interval} of a leader's session.
   *
   * @return whole seconds
   */
  public Duration keepaliveInterval() {
    return keepaliveInterval;
  }

  /**
   * Returns {@code tcp_keepalives_count} of a leader's session.
   *
   * @return the count
   */
  public int keepaliveCount() {
    return keepaliveCount;
  }

  /**
   * Returns {@code idle_session_timeout} of a leader's session.
   *
   * @return the timeout, zero when off
   */
  public Duration idleSessionTimeout() {
    return idleSessionTimeout;
  }

  /**
   * Returns the network timeout of the library's own round trips.
   *
   * @return the timeout
   */
  public Duration roundTripTimeout() {
    return roundTripTimeout;
  }

  /** The server-side bounds this timing gives a leader's session. */
  ServerBounds bounds() {
    return new ServerBounds(keepaliveIdle, keepaliveInterval, keepaliveCount, idleSessionTimeout);
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    if (!(o instanceof FailoverTiming)) {
      return false;
    }
    FailoverTiming t = (FailoverTiming) o;
    return heartbeatInterval.equals(t.heartbeatInterval)
        && selfFenceAfter.equals(t.selfFenceAfter)
        && keepaliveIdle.equals(t.keepaliveIdle)
        && keepaliveInterval.equals(t.keepaliveInterval)
        && keepaliveCount == t.keepaliveCount
        && idleSessionTimeout.equals(t.idleSessionTimeout)
        && roundTripTimeout.equals(t.roundTripTimeout);
  }

  @Override
  public int hashCode() {
    return Objects.hash(
        heartbeatInterval,
        selfFenceAfter,
        keepaliveIdle,
        keepaliveInterval,
        keepaliveCount,
        idleSessionTimeout,
        roundTripTimeout);
  }

  @Override
  public String toString() {
    String name = equals(DEFAULT) ? "DEFAULT " : equals(FAST) ? "FAST " : "";
    return String.format(
        Locale.ROOT,
        "FailoverTiming[%sheartbeat %s, selfFenceAfter %s, keepalives %s/%s/%d,"
            + " idleSessionTimeout %s, roundTripTimeout %s]",
        name,
        heartbeatInterval,
        selfFenceAfter,
        keepaliveIdle,
        keepaliveInterval,
        keepaliveCount,
        idleSessionTimeout,
        roundTripTimeout);
  }
}
