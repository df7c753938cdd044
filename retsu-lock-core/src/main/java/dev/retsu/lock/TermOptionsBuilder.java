package dev.retsu.lock;

import dev.retsu.lock.internal.Checks;
import dev.retsu.lock.internal.TimeSource;
import dev.retsu.lock.internal.session.ServerBounds;
import dev.retsu.lock.internal.session.SessionOpener;
import dev.retsu.lock.internal.session.SessionTerminator;
import dev.retsu.lock.internal.term.TermOptions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * The options every recipe's terms share, for {@link LeaderLoopBuilder} and {@link
 * LeaderGroupBuilder}: one place, one Javadoc per knob. Every option has a default (the {@code
 * DEFAULT_*} constants) and is checked when set, with a message naming the value and the rule; the
 * rules that tie options together are checked when the recipe is built. Not thread-safe.
 *
 * @param <B> the recipe's builder
 */
public abstract class TermOptionsBuilder<B extends TermOptionsBuilder<B>> {

  /** Default wait between refreshes: 15 seconds. */
  public static final Duration DEFAULT_REFRESH_INTERVAL = Duration.ofSeconds(15);

  /** Default time a close waits for a running refresh to stop: 10 seconds. */
  public static final Duration DEFAULT_CLOSE_TIMEOUT = Duration.ofSeconds(10);

  /** The longest duration any option takes: 24 days. */
  public static final Duration MAX_DURATION = Checks.MAX_DURATION;

  final DataSource dataSource;
  String candidateId;
  Duration refreshInterval = DEFAULT_REFRESH_INTERVAL;
  Duration refreshTimeout;
  FailoverTiming timing = FailoverTiming.DEFAULT;
  Duration closeTimeout = DEFAULT_CLOSE_TIMEOUT;
  boolean failFast = true;
  final List<LeaderListener> listeners = new ArrayList<>();
  TimeSource time = TimeSource.SYSTEM;
  LeaderWatch watch;

  TermOptionsBuilder(DataSource dataSource, Duration defaultRefreshTimeout) {
    this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    this.refreshTimeout = defaultRefreshTimeout;
  }

  @SuppressWarnings("unchecked")
  private B self() {
    return (B) this;
  }

  /**
   * Sets this candidate's id, shown in logs and in {@code application_name} of its sessions.
   * Defaults to host, pid and a random suffix. Set it when operators should recognise the instance
   * (a pod name), or when metrics and events must name it the same across restarts.
   *
   * @param candidateId 1 to 100 printable characters
   * @return this builder
   */
  public B candidateId(String candidateId) {
    this.candidateId = Checks.candidateId(candidateId);
    return self();
  }

  /**
   * Sets the wait between two refreshes (runs of the task) of a term. Defaults to 15 seconds. Set
   * it to how often the leader's work must run (a collector's export period, a scheduler's tick).
   *
   * @param interval positive
   * @return this builder
   */
  public B refreshInterval(Duration interval) {
    this.refreshInterval = Checks.positive("refreshInterval", interval);
    return self();
  }

  /**
   * Sets the longest one refresh may run; past it the refresh is interrupted and its term ends
   * ({@link LossReason#REFRESH_TIMED_OUT}). Defaults to 60 seconds for a loop, 5 seconds for a
   * group (a refresh holds its session's worker, so it must stay below {@code selfFenceAfter}).
   * Raise it for a task whose one run legitimately takes longer; lower it to replace a leader whose
   * task hangs sooner.
   *
   * @param timeout positive
   * @return this builder
   */
  public B refreshTimeout(Duration timeout) {
    this.refreshTimeout = Checks.positive("refreshTimeout", timeout);
    return self();
  }

  /**
   * Sets how fast a vanished, paused or cut-off leader is replaced: {@link FailoverTiming#DEFAULT}
   * (about 11 seconds), {@link FailoverTiming#FAST} (about 2 to 3 seconds), or a custom value built
   * from either. The relations between its settings are checked when the recipe is built. Defaults
   * to {@link FailoverTiming#DEFAULT}.
   *
   * @param timing the timing
   * @return this builder
   */
  public B timing(FailoverTiming timing) {
    this.timing = Objects.requireNonNull(timing, "timing");
    return self();
  }

  /**
   * Sets how long a close waits for a running refresh to stop after it was interrupted, before the
   * lock is released anyway. Defaults to 10 seconds. Raise it when the task needs longer to stop
   * cleanly (a flush, a transaction to finish); lower it when a shutdown must be quick.
   *
   * @param timeout positive
   * @return this builder
   */
  public B closeTimeout(Duration timeout) {
    this.closeTimeout = Checks.positive("closeTimeout", timeout);
    return self();
  }

  /**
   * Sets what a failure before any attempt has reached the database does (it cannot connect, the
   * database does not exist, the credentials are refused). With {@code true}, the default, a loop's
   * {@link LeaderLoop#run} throws it at once and a group's {@link LeaderGroup#start} throws it: the
   * caller sees a wrong URL at start-up instead of a candidate that retries it forever. With {@code
   * false} it is treated like any later outage and retried (a loop every {@code retryInterval}, a
   * group's sessions every {@code reconnectInterval}), so a service started before its database
   * becomes a candidate as soon as the database is up (what the Spring Boot starter does). A
   * transaction pooler is refused either way.
   *
   * @param failFast whether the first failure ends the recipe
   * @return this builder
   */
  public B failFast(boolean failFast) {
    this.failFast = failFast;
    return self();
  }

  /**
   * Adds a listener; listeners are called in the order added, one call at a time. A group's
   * listeners hear every key's terms ({@link Term#key()} says which). Use it to start and stop work
   * that lives as long as a term, or to record terms (the metrics module is one).
   *
   * @param listener the listener
   * @return this builder
   */
  public B listener(LeaderListener listener) {
    listeners.add(Objects.requireNonNull(listener, "listener"));
    return self();
  }

  /**
   * Makes the listeners hear {@link LeaderListener#onLeaderChanged} for this recipe's key (a
   * group's: every key) from {@code watch}, which the caller opens (one per process and data source
   * serves every loop and group) and closes after the recipe. Off by default: no watch session.
   *
   * @param watch an open watch
   * @return this builder
   */
  public B leaderWatch(LeaderWatch watch) {
    this.watch = Objects.requireNonNull(watch, "watch");
    return self();
  }

  /**
   * The fast preset, {@link FailoverTiming#FAST}: a partitioned, paused or vanished leader is
   * replaced within about 2 to 3 seconds instead of about 11, at the cost its Javadoc gives. The
   * recipes add what their own standbys need to keep up (see their override). Options set after
   * this call override it.
   *
   * @return this builder
   */
  public B fastFailover() {
    return timing(FailoverTiming.FAST);
  }

  /** Test seam: simulated time. */
  B timeSource(TimeSource time) {
    this.time = Objects.requireNonNull(time, "time");
    return self();
  }

  /** The server-side bounds these options give a session. */
  ServerBounds bounds() {
    return timing.bounds();
  }

  /** This candidate's id: the one set, or host, pid and a random suffix. */
  String id() {
    return candidateId != null ? candidateId : AdvisoryLock.defaultCandidateId();
  }

  /**
   * How the recipe's sessions are opened: on {@code key} (a group's membership key stands for the
   * group), with the server-side bounds of {@code term}. Looks up the data source's eviction now,
   * so that no reflection runs later, when a release must be quick.
   */
  SessionOpener.Spec spec(LockKey key, String context, TermOptions term) {
    SessionTerminator.prepare(dataSource);
    return new SessionOpener.Spec(
        dataSource,
        key,
        term.candidateId(),
        context,
        AdvisoryLock.applicationName(term.candidateId()),
        term.bounds().sessionSettings(),
        timing.roundTripTimeout(),
        timing.heartbeatInterval(),
        timing.selfFenceAfter(),
        time);
  }

  /** The validated shared options, for the candidate {@code id}. */
  TermOptions termOptions(String id) {
    return new TermOptions(
        dataSource,
        id,
        refreshInterval,
        refreshTimeout,
        timing.heartbeatInterval(),
        timing.selfFenceAfter(),
        bounds(),
        timing.roundTripTimeout(),
        closeTimeout,
        failFast,
        listeners,
        time,
        watch);
  }
}
