package dev.retsu.lock;

import dev.retsu.lock.internal.Checks;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * Options of a {@link LeaderGroup}; every option has a default ({@code LeaderGroup.DEFAULT_*}) and
 * is checked when set, with a message naming the value and the rule. {@link #build()} checks the
 * rules that tie options together. Not thread-safe.
 */
public final class LeaderGroupBuilder {

  private static final Pattern GROUP_NAME = Pattern.compile("[A-Za-z0-9._-]{1,40}");

  private final DataSource dataSource;
  private final String name;
  private final List<LockKey> keys;
  private String candidateId;
  private int sessions = LeaderGroup.DEFAULT_SESSIONS;
  private int batchSize = LeaderGroup.DEFAULT_BATCH_SIZE;
  private Duration refreshInterval = LeaderLoopBuilder.DEFAULT_REFRESH_INTERVAL;
  private Duration refreshTimeout = LeaderGroup.DEFAULT_REFRESH_TIMEOUT;
  private Duration heartbeatInterval = LeaderLoopBuilder.DEFAULT_HEARTBEAT_INTERVAL;
  private Duration selfFenceAfter = LeaderLoopBuilder.DEFAULT_SELF_FENCE_AFTER;
  private Duration keepaliveIdle = LeaderLoopBuilder.DEFAULT_KEEPALIVE_IDLE;
  private Duration keepaliveInterval = LeaderLoopBuilder.DEFAULT_KEEPALIVE_INTERVAL;
  private int keepaliveCount = LeaderLoopBuilder.DEFAULT_KEEPALIVE_COUNT;
  private Duration idleSessionTimeout = LeaderLoopBuilder.DEFAULT_IDLE_SESSION_TIMEOUT;
  private Duration roundTripTimeout = AdvisoryLock.DEFAULT_ROUND_TRIP_TIMEOUT;
  private Duration membershipInterval = LeaderGroup.DEFAULT_MEMBERSHIP_INTERVAL;
  private Duration reconnectInterval = LeaderGroup.DEFAULT_RECONNECT_INTERVAL;
  private Duration closeTimeout = LeaderLoopBuilder.DEFAULT_CLOSE_TIMEOUT;
  private boolean failFast = true;
  private final List<LeaderListener> listeners = new ArrayList<>();
  private TimeSource time = TimeSource.SYSTEM;

  LeaderGroupBuilder(DataSource dataSource, String name, List<LockKey> keys) {
    this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    Objects.requireNonNull(name, "name");
    if (!GROUP_NAME.matcher(name).matches()) {
      throw new IllegalArgumentException(
          "name must be 1 to 40 characters of A-Z, a-z, 0-9, '.', '_' or '-', but was \""
              + Checks.shorten(name)
              + "\"");
    }
    this.name = name;
    Objects.requireNonNull(keys, "keys");
    if (keys.isEmpty() || keys.size() > LeaderGroup.MAX_KEYS) {
      throw new IllegalArgumentException(
          "keys must hold 1 to " + LeaderGroup.MAX_KEYS + " keys, but held " + keys.size());
    }
    for (LockKey k : keys) {
      Objects.requireNonNull(k, "keys must not contain null");
    }
    this.keys = List.copyOf(keys);
  }

  /**
   * Sets this member's id, shown in logs and in {@code application_name} of every session. Defaults
   * to host, pid and a random suffix.
   *
   * @param candidateId 1 to 100 printable characters
   * @return this builder
   */
  public LeaderGroupBuilder candidateId(String candidateId) {
    this.candidateId = Checks.candidateId(candidateId);
    return this;
  }

  /**
   * Sets how many sessions this member opens (never more than there are keys); keys spread over
   * them evenly. Defaults to 4.
   *
   * @param sessions 1 to {@value LeaderGroup#MAX_SESSIONS}
   * @return this builder
   */
  public LeaderGroupBuilder sessions(int sessions) {
    this.sessions = Checks.within("sessions", sessions, 1, LeaderGroup.MAX_SESSIONS);
    return this;
  }

  /**
   * Sets the most keys one locking statement tries. Each statement that takes keys is followed by
   * one fencing-token statement for all the keys it took. Defaults to 1,000.
   *
   * @param batchSize 1 to 10,000
   * @return this builder
   */
  public LeaderGroupBuilder batchSize(int batchSize) {
    this.batchSize = Checks.within("batchSize", batchSize, 1, 10_000);
    return this;
  }

  /**
   * Sets the wait between two refreshes (runs of the task) of one key. Defaults to 15 seconds.
   *
   * @param interval positive
   * @return this builder
   */
  public LeaderGroupBuilder refreshInterval(Duration interval) {
    this.refreshInterval = Checks.positive("refreshInterval", interval);
    return this;
  }

  /**
   * Sets the longest one refresh may run. A refresh holds its session's worker (every key on that
   * session waits), so this is short: past it the key's term ends ({@link
   * LossReason#REFRESH_TIMED_OUT}) and the worker is interrupted. Shorter than selfFenceAfter.
   * Defaults to 5 seconds.
   *
   * @param timeout positive
   * @return this builder
   */
  public LeaderGroupBuilder refreshTimeout(Duration timeout) {
    this.refreshTimeout = Checks.positive("refreshTimeout", timeout);
    return this;
  }

  /**
   * Sets how often each session proves that it still holds its keys. At most half of
   * selfFenceAfter. Defaults to 2 seconds.
   *
   * @param interval positive
   * @return this builder
   */
  public LeaderGroupBuilder heartbeatInterval(Duration interval) {
    this.heartbeatInterval = Checks.positive("heartbeatInterval", interval);
    return this;
  }

  /**
   * Sets the self-fencing deadline of each session: every key on a session stops acting when no
   * round trip on it has succeeded for this long. At least 1 second below the server-side bound.
   * Defaults to 8 seconds.
   *
   * @param deadline positive
   * @return this builder
   */
  public LeaderGroupBuilder selfFenceAfter(Duration deadline) {
    this.selfFenceAfter = Checks.positive("selfFenceAfter", deadline);
    return this;
  }

  /**
   * Sets the TCP keepalives of every session. Defaults to 5 s, 2 s, 3.
   *
   * @param idle {@code tcp_keepalives_idle}, whole seconds 1..3600
   * @param interval {@code tcp_keepalives_interval}, whole seconds 1..3600
   * @param count {@code tcp_keepalives_count}, 1..1000
   * @return this builder
   */
  public LeaderGroupBuilder serverKeepalives(Duration idle, Duration interval, int count) {
    this.keepaliveIdle = Checks.wholeSeconds("keepaliveIdle", idle);
    this.keepaliveInterval = Checks.wholeSeconds("keepaliveInterval", interval);
    this.keepaliveCount = Checks.within("keepaliveCount", count, 1, 1000);
    return this;
  }

  /**
   * Sets {@code idle_session_timeout} on every session. Defaults to 20 seconds.
   *
   * @param timeout zero (off) or at least 1 second
   * @return this builder
   */
  public LeaderGroupBuilder serverIdleSessionTimeout(Duration timeout) {
    this.idleSessionTimeout =
        Checks.zeroOrAtLeast("idleSessionTimeout", timeout, Duration.ofSeconds(1));
    return this;
  }

  /**
   * Sets the network timeout of the group's own round trips. Defaults to 10 seconds.
   *
   * @param timeout positive
   * @return this builder
   */
  public LeaderGroupBuilder roundTripTimeout(Duration timeout) {
    this.roundTripTimeout = Checks.positive("roundTripTimeout", timeout);
    return this;
  }

  /**
   * Sets how often this member reads the group's membership (one {@code pg_locks} read) and
   * rebalances. Joins, leaves and crashes settle within about two of these. Defaults to 2 seconds.
   *
   * @param interval at least 50 ms
   * @return this builder
   */
  public LeaderGroupBuilder membershipInterval(Duration interval) {
    this.membershipInterval = Checks.atLeast("membershipInterval", interval, Duration.ofMillis(50));
    return this;
  }

  /**
   * Sets the wait before a lost or failed session is opened again. Defaults to 1 second.
   *
   * @param interval positive
   * @return this builder
   */
  public LeaderGroupBuilder reconnectInterval(Duration interval) {
    this.reconnectInterval = Checks.positive("reconnectInterval", interval);
    return this;
  }

  /**
   * Sets how long {@link LeaderGroup#close()} waits for running refreshes to stop. Defaults to 10
   * seconds.
   *
   * @param timeout positive
   * @return this builder
   */
  public LeaderGroupBuilder closeTimeout(Duration timeout) {
    this.closeTimeout = Checks.positive("closeTimeout", timeout);
    return this;
  }

  /**
   * Sets what {@link LeaderGroup#start} does when the first session cannot be opened (the database
   * cannot be reached, does not exist, refuses the credentials). With {@code true}, the default,
   * {@code start} throws and the group is {@link LeaderGroup.State#FAILED}. With {@code false},
   * {@code start} returns and every session keeps trying every {@code reconnectInterval}, so a
   * service started before its database joins the group as soon as the database is up. A
   * transaction pooler stops the group either way.
   *
   * @param failFast whether a first session that cannot be opened fails {@code start}
   * @return this builder
   */
  public LeaderGroupBuilder failFast(boolean failFast) {
    this.failFast = failFast;
    return this;
  }

  /**
   * Adds a listener; it hears every key's terms ({@link Term#key()} says which key). {@link
   * LeaderListener#onAttempt} is not called by a group.
   *
   * @param listener the listener
   * @return this builder
   */
  public LeaderGroupBuilder listener(LeaderListener listener) {
    listeners.add(Objects.requireNonNull(listener, "listener"));
    return this;
  }

  /** Test seam: simulated time. */
  LeaderGroupBuilder time(TimeSource time) {
    this.time = Objects.requireNonNull(time, "time");
    return this;
  }

  /**
   * Builds the group.
   *
   * @return the group, not started
   * @throws IllegalStateException when options contradict each other (the message says which)
   */
  public LeaderGroup build() {
    ServerBounds bounds =
        new ServerBounds(keepaliveIdle, keepaliveInterval, keepaliveCount, idleSessionTimeout);
    return new LeaderGroup(
        new GroupSettings(
            dataSource,
            name,
            candidateId != null ? candidateId : AdvisoryLock.defaultCandidateId(),
            keys,
            sessions,
            batchSize,
            refreshInterval,
            refreshTimeout,
            heartbeatInterval,
            selfFenceAfter,
            bounds,
            roundTripTimeout,
            membershipInterval,
            reconnectInterval,
            closeTimeout,
            failFast,
            listeners,
            time));
  }
}
