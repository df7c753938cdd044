package dev.retsu.lock;

import dev.retsu.lock.internal.Checks;
import dev.retsu.lock.internal.group.GroupSettings;
import dev.retsu.lock.internal.group.Membership;
import dev.retsu.lock.internal.session.SessionOpener;
import dev.retsu.lock.internal.term.TermOptions;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * Options of a {@link LeaderGroup}: the group's own (sessions, batches, membership, reconnects)
 * here, the ones every recipe's terms share in {@link TermOptionsBuilder}. Every option has a
 * default ({@code LeaderGroup.DEFAULT_*}, {@code TermOptionsBuilder.DEFAULT_*}) and is checked when
 * set, with a message naming the value and the rule. {@link #build()} checks the rules that tie
 * options together. Not thread-safe.
 */
public final class LeaderGroupBuilder extends TermOptionsBuilder<LeaderGroupBuilder> {

  private static final Pattern GROUP_NAME = Pattern.compile("[A-Za-z0-9._-]{1,40}");

  private final String name;
  private final List<LockKey> keys;
  private int sessions = LeaderGroup.DEFAULT_SESSIONS;
  private int batchSize = LeaderGroup.DEFAULT_BATCH_SIZE;
  private Duration membershipInterval = LeaderGroup.DEFAULT_MEMBERSHIP_INTERVAL;
  private Duration reconnectInterval = LeaderGroup.DEFAULT_RECONNECT_INTERVAL;
  private Duration memberWatchInterval = LeaderGroup.DEFAULT_MEMBER_WATCH_INTERVAL;

  LeaderGroupBuilder(DataSource dataSource, String name, List<LockKey> keys) {
    super(dataSource, LeaderGroup.DEFAULT_REFRESH_TIMEOUT);
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
   * Sets how many sessions this member opens (never more than there are keys); keys spread over
   * them evenly. Defaults to 4. More sessions spread the keys' work over more connections (a slow
   * key holds up only its session's others); fewer cost the database fewer connections.
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
   * one fencing-token statement for all the keys it took. Defaults to 1,000. Lower it only when one
   * statement over that many keys runs too long for the server's statement limits.
   *
   * @param batchSize 1 to 10,000
   * @return this builder
   */
  public LeaderGroupBuilder batchSize(int batchSize) {
    this.batchSize = Checks.within("batchSize", batchSize, 1, 10_000);
    return this;
  }

  /**
   * Sets how often this member reads the group's membership (one statement that probes the {@value
   * LeaderGroup#MAX_MEMBERS} membership slots) and rebalances. Joins, leaves and crashes settle
   * within about two of these. Defaults to 2 seconds. Lower it when keys must move faster after a
   * join (a scale-out), at one statement per member per interval.
   *
   * @param interval at least 50 ms
   * @return this builder
   */
  public LeaderGroupBuilder membershipInterval(Duration interval) {
    this.membershipInterval = Checks.atLeast("membershipInterval", interval, Duration.ofMillis(50));
    return this;
  }

  /**
   * Sets the wait before a lost or failed session is opened again. Defaults to 1 second. Raise it
   * to spare a database that is refusing connections from reconnects by many members.
   *
   * @param interval positive
   * @return this builder
   */
  public LeaderGroupBuilder reconnectInterval(Duration interval) {
    this.reconnectInterval = Checks.positive("reconnectInterval", interval);
    return this;
  }

  /**
   * Sets how often this member looks whether the member before it (in membership-slot order) is
   * still there, on a session of its own that also listens for the notices members send when they
   * join or leave. A member that leaves or crashes is then seen within about this long instead of
   * at the next membership read, and the others take its keys over at once. Each look is one
   * statement that takes no lock for longer than it runs (no waiting statement, no snapshot held).
   * Defaults to 25 ms; zero turns the watch off (one session fewer per member; departures are then
   * seen at the next membership read).
   *
   * @param interval zero, or 5 ms to 10 seconds
   * @return this builder
   */
  public LeaderGroupBuilder memberWatchInterval(Duration interval) {
    Objects.requireNonNull(interval, "memberWatchInterval");
    if (!interval.isZero()
        && (interval.compareTo(Duration.ofMillis(5)) < 0
            || interval.compareTo(Duration.ofSeconds(10)) > 0)) {
      throw new IllegalArgumentException(
          "memberWatchInterval must be zero (off) or 5 ms to 10 s, but was " + interval);
    }
    this.memberWatchInterval = interval;
    return this;
  }

  /**
   * The fast-failover settings of {@link TermOptionsBuilder#fastFailover()}, and a refresh timeout
   * of 750 ms (a group's refresh must stay below its 1 s self-fencing deadline).
   *
   * @return this builder
   */
  @Override
  public LeaderGroupBuilder fastFailover() {
    super.fastFailover();
    return refreshTimeout(FAST_REFRESH_TIMEOUT);
  }

  /** {@link #fastFailover()}'s refresh timeout for a group: 750 ms. */
  public static final Duration FAST_REFRESH_TIMEOUT = Duration.ofMillis(750);

  /**
   * Builds the group.
   *
   * @return the group, not started
   * @throws IllegalStateException when options contradict each other (the message says which)
   */
  public LeaderGroup build() {
    String id = id();
    TermOptions term = termOptions(id);
    SessionOpener.Spec spec =
        spec(new Membership(name).groupKey(), "[group=" + name + ", candidate=" + id + "]", term);
    return new LeaderGroup(
        new GroupSettings(
            term,
            spec,
            name,
            keys,
            sessions,
            batchSize,
            membershipInterval,
            reconnectInterval,
            memberWatchInterval));
  }
}
