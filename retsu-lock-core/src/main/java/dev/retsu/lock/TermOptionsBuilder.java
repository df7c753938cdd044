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

  /** Default interval between proofs of a session: 2 seconds. */
  public static final Duration DEFAULT_HEARTBEAT_INTERVAL = Duration.ofSeconds(2);

  /** Default self-fencing deadline: 8 seconds after the start of the last successful round trip. */
  public static final Duration DEFAULT_SELF_FENCE_AFTER = Duration.ofSeconds(8);

  /** Default {@code tcp_keepalives_idle} on a leader's session: 5 seconds. */
  public static final Duration DEFAULT_KEEPALIVE_IDLE = Duration.ofSeconds(5);

  /** Default {@code tcp_keepalives_interval} on a leader's session: 2 seconds. */
  public static final Duration DEFAULT_KEEPALIVE_INTERVAL = Duration.ofSeconds(2);

  /** Default {@code tcp_keepalives_count} on a leader's session: 3. */
  public static final int DEFAULT_KEEPALIVE_COUNT = 3;

  /**
   * Default {@code idle_session_timeout} on a leader's session: 11 seconds, the keepalive bound, so
   * a paused leader (SIGSTOP, a long GC, a frozen VM, whose kernel still answers keepalives) is
   * released as soon as a vanished one. Heartbeats keep a healthy leader's session busier than
   * that.
   */
  public static final Duration DEFAULT_IDLE_SESSION_TIMEOUT = Duration.ofSeconds(11);

  /** The least gap between the self-fencing deadline and the server-side bound: 1 second. */
  public static final Duration MIN_FENCING_MARGIN = ServerBounds.MIN_FENCING_MARGIN;

  /** Default time a close waits for a running refresh to stop: 10 seconds. */
  public static final Duration DEFAULT_CLOSE_TIMEOUT = Duration.ofSeconds(10);

  /** The longest duration any option takes: 24 days. */
  public static final Duration MAX_DURATION = Checks.MAX_DURATION;

  final DataSource dataSource;
  String candidateId;
  Duration refreshInterval = DEFAULT_REFRESH_INTERVAL;
  Duration refreshTimeout;
  Duration heartbeatInterval = DEFAULT_HEARTBEAT_INTERVAL;
  Duration selfFenceAfter = DEFAULT_SELF_FENCE_AFTER;
  Duration keepaliveIdle = DEFAULT_KEEPALIVE_IDLE;
  Duration keepaliveInterval = DEFAULT_KEEPALIVE_INTERVAL;
  int keepaliveCount = DEFAULT_KEEPALIVE_COUNT;
  Duration idleSessionTimeout = DEFAULT_IDLE_SESSION_TIMEOUT;
  Duration roundTripTimeout = AdvisoryLock.DEFAULT_ROUND_TRIP_TIMEOUT;
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
   * Defaults to host, pid and a random suffix.
   *
   * @param candidateId 1 to 100 printable characters
   * @return this builder
   */
  public B candidateId(String candidateId) {
    this.candidateId = Checks.candidateId(candidateId);
    return self();
  }

  /**
   * Sets the wait between two refreshes (runs of the task) of a term. Defaults to 15 seconds.
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
   *
   * @param timeout positive
   * @return this builder
   */
  public B refreshTimeout(Duration timeout) {
    this.refreshTimeout = Checks.positive("refreshTimeout", timeout);
    return self();
  }

  /**
   * Sets how often a leader's session is proven: alive (any round trip counts) when it is otherwise
   * quiet, and that it still holds its keys when user code has used it, however busy the task keeps
   * it. It also bounds what user SQL that releases a key through a function can go unseen for. At
   * most half of {@code selfFenceAfter}. Defaults to 2 seconds.
   *
   * @param interval positive
   * @return this builder
   */
  public B heartbeatInterval(Duration interval) {
    this.heartbeatInterval = Checks.positive("heartbeatInterval", interval);
    return self();
  }

  /**
   * Sets the self-fencing deadline: a leader stops acting when no round trip on its session has
   * succeeded for this long (measured from the round trip's start, on the monotonic and the wall
   * clock). At least 1 second below the server-side bound. Defaults to 8 seconds.
   *
   * @param deadline positive
   * @return this builder
   */
  public B selfFenceAfter(Duration deadline) {
    this.selfFenceAfter = Checks.positive("selfFenceAfter", deadline);
    return self();
  }

  /**
   * Sets the TCP keepalives of a leader's session: PostgreSQL ends it after idle + interval × count
   * of silence ({@code tcp_user_timeout} is set to the same bound). Defaults to 5 s, 2 s, 3.
   *
   * @param idle {@code tcp_keepalives_idle}, whole seconds 1..3600
   * @param interval {@code tcp_keepalives_interval}, whole seconds 1..3600
   * @param count {@code tcp_keepalives_count}, 1..1000
   * @return this builder
   */
  public B serverKeepalives(Duration idle, Duration interval, int count) {
    this.keepaliveIdle = Checks.wholeSeconds("keepaliveIdle", idle);
    this.keepaliveInterval = Checks.wholeSeconds("keepaliveInterval", interval);
    this.keepaliveCount = Checks.within("keepaliveCount", count, 1, 1000);
    return self();
  }

  /**
   * Sets {@code idle_session_timeout} (and {@code idle_in_transaction_session_timeout}) on a
   * leader's session: the server ends a leader that is alive but paused after this long. Defaults
   * to 11 seconds (the default keepalive bound); zero turns it off. Heartbeats keep a healthy
   * session from ever idling this long.
   *
   * @param timeout zero or at least 1 second
   * @return this builder
   */
  public B serverIdleSessionTimeout(Duration timeout) {
    this.idleSessionTimeout =
        Checks.zeroOrAtLeast("idleSessionTimeout", timeout, Duration.ofSeconds(1));
    return self();
  }

  /**
   * Sets the network timeout of the library's own round trips. Defaults to 10 seconds.
   *
   * @param timeout positive
   * @return this builder
   */
  public B roundTripTimeout(Duration timeout) {
    this.roundTripTimeout = Checks.positive("roundTripTimeout", timeout);
    return self();
  }

  /**
   * Sets how long a close waits for a running refresh to stop after it was interrupted, before the
   * lock is released anyway. Defaults to 10 seconds.
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
   * listeners hear every key's terms ({@link Term#key()} says which).
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
   * The fast-failover settings: a partitioned, paused or vanished leader is replaced within about 3
   * seconds instead of about 11, with the same guarantee (the leader fences itself before the
   * server can free its lock). The server ends the leader's session after 2 seconds of silence
   * (keepalives 1 s, 1 s, 1; {@code tcp_user_timeout} and {@code idle_session_timeout} 2 s), the
   * leader fences itself 1 second after the start of its last successful round trip, and proves its
   * session every 500 ms ({@code roundTripTimeout} 1 s). A loop also retries every 500 ms. What it
   * costs: two heartbeats a second per leader session, and a leader whose round trips stall for
   * about half a second (a long GC pause, a slow network, an overloaded server) fences itself and
   * hands over where the defaults would have ridden it out. Options set after this call override
   * it.
   *
   * @return this builder
   */
  public B fastFailover() {
    heartbeatInterval(FAST_HEARTBEAT_INTERVAL);
    selfFenceAfter(FAST_SELF_FENCE_AFTER);
    serverKeepalives(Duration.ofSeconds(1), Duration.ofSeconds(1), 1);
    serverIdleSessionTimeout(Duration.ofSeconds(2));
    roundTripTimeout(Duration.ofSeconds(1));
    return self();
  }

  /** {@link #fastFailover()}'s heartbeat: 500 ms. */
  public static final Duration FAST_HEARTBEAT_INTERVAL = Duration.ofMillis(500);

  /** {@link #fastFailover()}'s self-fencing deadline: 1 second. */
  public static final Duration FAST_SELF_FENCE_AFTER = Duration.ofSeconds(1);

  /** Test seam: simulated time. */
  B timeSource(TimeSource time) {
    this.time = Objects.requireNonNull(time, "time");
    return self();
  }

  /** The server-side bounds these options give a session. */
  ServerBounds bounds() {
    return new ServerBounds(keepaliveIdle, keepaliveInterval, keepaliveCount, idleSessionTimeout);
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
        roundTripTimeout,
        heartbeatInterval,
        selfFenceAfter,
        time);
  }

  /** The validated shared options, for the candidate {@code id}. */
  TermOptions termOptions(String id) {
    return new TermOptions(
        dataSource,
        id,
        refreshInterval,
        refreshTimeout,
        heartbeatInterval,
        selfFenceAfter,
        bounds(),
        roundTripTimeout,
        closeTimeout,
        failFast,
        listeners,
        time,
        watch);
  }
}
