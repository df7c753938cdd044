package dev.retsu.lock;

import dev.retsu.lock.internal.Checks;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * Options of a {@link LeaderLoop}; every option has a default (the {@code DEFAULT_*} constants
 * here) and is checked when set, with a message naming the value and the rule. {@link #build()}
 * checks the rules that tie options together and copies everything into an immutable loop. Not
 * thread-safe.
 */
public final class LeaderLoopBuilder {

  /** Default wait between standby attempts: 15 seconds. */
  public static final Duration DEFAULT_RETRY_INTERVAL = Duration.ofSeconds(15);

  /** Default wait between refreshes: 15 seconds. */
  public static final Duration DEFAULT_REFRESH_INTERVAL = Duration.ofSeconds(15);

  /** Default retry jitter: each standby wait is drawn from 90 % to 100 % of retryInterval. */
  public static final double DEFAULT_RETRY_JITTER = 0.1;

  /**
   * Default failure policy: {@link FailurePolicy#STEP_DOWN}, so one failed refresh in an embedded
   * library never leaves a service where nobody leads. The Retsu collector sets {@link
   * FailurePolicy#EXIT}.
   */
  public static final FailurePolicy DEFAULT_FAILURE_POLICY = FailurePolicy.STEP_DOWN;

  /** Default limit on one refresh: 60 seconds. */
  public static final Duration DEFAULT_REFRESH_TIMEOUT = Duration.ofSeconds(60);

  /** Default interval between ownership proofs while leading: 2 seconds. */
  public static final Duration DEFAULT_HEARTBEAT_INTERVAL = Duration.ofSeconds(2);

  /** Default self-fencing deadline: 8 seconds after the start of the last successful round trip. */
  public static final Duration DEFAULT_SELF_FENCE_AFTER = Duration.ofSeconds(8);

  /** Default {@code tcp_keepalives_idle} on the leader's session: 5 seconds. */
  public static final Duration DEFAULT_KEEPALIVE_IDLE = Duration.ofSeconds(5);

  /** Default {@code tcp_keepalives_interval} on the leader's session: 2 seconds. */
  public static final Duration DEFAULT_KEEPALIVE_INTERVAL = Duration.ofSeconds(2);

  /** Default {@code tcp_keepalives_count} on the leader's session: 3. */
  public static final int DEFAULT_KEEPALIVE_COUNT = 3;

  /**
   * Default {@code idle_session_timeout} on the leader's session: 11 seconds, the keepalive bound,
   * so a paused leader (SIGSTOP, a long GC, a frozen VM, whose kernel still answers keepalives) is
   * released as soon as a vanished one. Heartbeats keep a healthy leader's session busier than
   * that.
   */
  public static final Duration DEFAULT_IDLE_SESSION_TIMEOUT = Duration.ofSeconds(11);

  /** The least gap between the self-fencing deadline and the server-side bound: 1 second. */
  public static final Duration MIN_FENCING_MARGIN = ServerBounds.MIN_FENCING_MARGIN;

  /** Default longest wait between failed terms under {@link FailurePolicy#STEP_DOWN}: 5 minutes. */
  public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofMinutes(5);

  /** Default takeover mode: {@link TakeoverMode#POLL}. */
  public static final TakeoverMode DEFAULT_TAKEOVER = TakeoverMode.POLL;

  /**
   * Default longest single wait in {@link TakeoverMode#WAIT} before it is re-armed: 5 minutes. Each
   * re-arm leaves one {@code lock_timeout} ERROR line in the server log and each wait runs one
   * deadlock check, so re-arms are rare; the waiting client's own keepalives, not the re-arm,
   * notice a dead server.
   */
  public static final Duration DEFAULT_WAIT_TIMEOUT = Duration.ofMinutes(5);

  /** Default time {@link LeaderLoop#close()} waits for a running refresh to stop: 10 seconds. */
  public static final Duration DEFAULT_CLOSE_TIMEOUT = Duration.ofSeconds(10);

  /** The longest duration any option takes: 24 days. */
  public static final Duration MAX_DURATION = Checks.MAX_DURATION;

  private final DataSource dataSource;
  private final LockKey key;
  private String candidateId;
  private Duration retryInterval = DEFAULT_RETRY_INTERVAL;
  private Duration refreshInterval = DEFAULT_REFRESH_INTERVAL;
  private double retryJitter = DEFAULT_RETRY_JITTER;
  private FailurePolicy failurePolicy = DEFAULT_FAILURE_POLICY;
  private Duration refreshTimeout = DEFAULT_REFRESH_TIMEOUT;
  private Duration heartbeatInterval = DEFAULT_HEARTBEAT_INTERVAL;
  private Duration selfFenceAfter = DEFAULT_SELF_FENCE_AFTER;
  private Duration keepaliveIdle = DEFAULT_KEEPALIVE_IDLE;
  private Duration keepaliveInterval = DEFAULT_KEEPALIVE_INTERVAL;
  private int keepaliveCount = DEFAULT_KEEPALIVE_COUNT;
  private Duration idleSessionTimeout = DEFAULT_IDLE_SESSION_TIMEOUT;
  private Duration roundTripTimeout = AdvisoryLock.DEFAULT_ROUND_TRIP_TIMEOUT;
  private Duration maxBackoff = DEFAULT_MAX_BACKOFF;
  private Duration closeTimeout = DEFAULT_CLOSE_TIMEOUT;
  private TakeoverMode takeover = DEFAULT_TAKEOVER;
  private Duration waitTimeout = DEFAULT_WAIT_TIMEOUT;
  private boolean failFast = true;
  private final List<LeaderListener> listeners = new ArrayList<>();
  private TimeSource time = TimeSource.SYSTEM;

  LeaderLoopBuilder(DataSource dataSource, LockKey key) {
    this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    this.key = Objects.requireNonNull(key, "key");
  }

  /**
   * Sets this candidate's id, shown in logs and in {@code application_name}. Defaults to host, pid
   * and a random suffix.
   *
   * @param candidateId 1 to 100 printable characters
   * @return this builder
   */
  public LeaderLoopBuilder candidateId(String candidateId) {
    this.candidateId = Checks.candidateId(candidateId);
    return this;
  }

  /**
   * Sets the wait between standby attempts in {@link TakeoverMode#POLL}. Defaults to 15 seconds.
   *
   * @param interval positive
   * @return this builder
   */
  public LeaderLoopBuilder retryInterval(Duration interval) {
    this.retryInterval = Checks.positive("retryInterval", interval);
    return this;
  }

  /**
   * Sets the wait between refreshes (runs of the leader task). Defaults to 15 seconds.
   *
   * @param interval positive
   * @return this builder
   */
  public LeaderLoopBuilder refreshInterval(Duration interval) {
    this.refreshInterval = Checks.positive("refreshInterval", interval);
    return this;
  }

  /**
   * Sets the jitter of standby waits: each is drawn uniformly from retryInterval × (1 − jitter) to
   * retryInterval, so that standbys started together do not contend in step while retryInterval
   * stays the longest wait. Defaults to 0.1.
   *
   * @param jitter within [0, 1)
   * @return this builder
   */
  public LeaderLoopBuilder retryJitter(double jitter) {
    this.retryJitter = Checks.fraction("retryJitter", jitter);
    return this;
  }

  /**
   * Sets what a failed term does. Defaults to {@link FailurePolicy#STEP_DOWN}.
   *
   * @param policy the policy
   * @return this builder
   */
  public LeaderLoopBuilder failurePolicy(FailurePolicy policy) {
    this.failurePolicy = Objects.requireNonNull(policy, "failurePolicy");
    return this;
  }

  /**
   * Sets the longest one refresh may run; past it the refresh is interrupted and the term ends
   * ({@link LossReason#REFRESH_TIMED_OUT}). Defaults to 60 seconds.
   *
   * @param timeout positive
   * @return this builder
   */
  public LeaderLoopBuilder refreshTimeout(Duration timeout) {
    this.refreshTimeout = Checks.positive("refreshTimeout", timeout);
    return this;
  }

  /**
   * Sets how often the leader proves it still owns the lock when its session is otherwise quiet. At
   * most half of selfFenceAfter. Defaults to 2 seconds.
   *
   * @param interval positive
   * @return this builder
   */
  public LeaderLoopBuilder heartbeatInterval(Duration interval) {
    this.heartbeatInterval = Checks.positive("heartbeatInterval", interval);
    return this;
  }

  /**
   * Sets the self-fencing deadline: the leader stops acting when no round trip on its session has
   * succeeded for this long (measured from the round trip's start, on the monotonic and the wall
   * clock). At least 1 second below the server-side bound. Defaults to 8 seconds.
   *
   * @param deadline positive
   * @return this builder
   */
  public LeaderLoopBuilder selfFenceAfter(Duration deadline) {
    this.selfFenceAfter = Checks.positive("selfFenceAfter", deadline);
    return this;
  }

  /**
   * Sets the TCP keepalives of the leader's session: PostgreSQL ends it after idle + interval ×
   * count of silence. Defaults to 5 s, 2 s, 3.
   *
   * @param idle {@code tcp_keepalives_idle}, whole seconds 1..3600
   * @param interval {@code tcp_keepalives_interval}, whole seconds 1..3600
   * @param count {@code tcp_keepalives_count}, 1..1000
   * @return this builder
   */
  public LeaderLoopBuilder serverKeepalives(Duration idle, Duration interval, int count) {
    this.keepaliveIdle = Checks.wholeSeconds("keepaliveIdle", idle);
    this.keepaliveInterval = Checks.wholeSeconds("keepaliveInterval", interval);
    this.keepaliveCount = Checks.within("keepaliveCount", count, 1, 1000);
    return this;
  }

  /**
   * Sets {@code idle_session_timeout} (and {@code idle_in_transaction_session_timeout}) on the
   * leader's session: the server ends a leader that is alive but paused after this long. Defaults
   * to 11 seconds (the default keepalive bound); zero turns it off. The leader's heartbeats, every
   * {@code heartbeatInterval}, keep a healthy session from ever idling this long.
   *
   * @param timeout zero or at least 1 second
   * @return this builder
   */
  public LeaderLoopBuilder serverIdleSessionTimeout(Duration timeout) {
    this.idleSessionTimeout =
        Checks.zeroOrAtLeast("idleSessionTimeout", timeout, Duration.ofSeconds(1));
    return this;
  }

  /**
   * Sets the network timeout of the library's own round trips. Defaults to 10 seconds.
   *
   * @param timeout positive
   * @return this builder
   */
  public LeaderLoopBuilder roundTripTimeout(Duration timeout) {
    this.roundTripTimeout = Checks.positive("roundTripTimeout", timeout);
    return this;
  }

  /**
   * Sets the longest wait between failed terms under {@link FailurePolicy#STEP_DOWN} (the wait
   * doubles from retryInterval). Defaults to 5 minutes.
   *
   * @param max positive
   * @return this builder
   */
  public LeaderLoopBuilder maxBackoff(Duration max) {
    this.maxBackoff = Checks.positive("maxBackoff", max);
    return this;
  }

  /**
   * Sets how long {@link LeaderLoop#close()} waits for a running refresh to stop after it was
   * interrupted, before the lock is released anyway. Defaults to 10 seconds.
   *
   * @param timeout positive
   * @return this builder
   */
  public LeaderLoopBuilder closeTimeout(Duration timeout) {
    this.closeTimeout = Checks.positive("closeTimeout", timeout);
    return this;
  }

  /**
   * Sets how a standby takes over. Defaults to {@link TakeoverMode#POLL}.
   *
   * @param mode the mode
   * @return this builder
   */
  public LeaderLoopBuilder takeover(TakeoverMode mode) {
    this.takeover = Objects.requireNonNull(mode, "takeover");
    return this;
  }

  /**
   * Sets the longest single wait of a {@link TakeoverMode#WAIT} standby before it is re-armed.
   * Defaults to 5 minutes. Every re-arm leaves one {@code lock_timeout} ERROR line in the server
   * log and every wait runs PostgreSQL's deadlock check once (after {@code deadlock_timeout}), so
   * short waits cost the server; the waiting client's socket keepalives, not this timeout, notice a
   * dead server.
   *
   * @param timeout at least 10 ms
   * @return this builder
   */
  public LeaderLoopBuilder waitTimeout(Duration timeout) {
    this.waitTimeout = Checks.atLeast("waitTimeout", timeout, Duration.ofMillis(10));
    return this;
  }

  /**
   * Sets what a failure before any attempt has reached the database does (it cannot connect, the
   * database does not exist, the credentials are refused). With {@code true}, the default, {@link
   * LeaderLoop#run} throws it at once: a plain loop's caller sees a wrong URL at start-up instead
   * of a loop that retries it forever. With {@code false} it is treated like any later outage: the
   * loop logs it and tries again after {@code retryInterval}, so a service started before its
   * database becomes a candidate as soon as the database is up (what the Spring Boot starter does).
   * A hot standby or a transaction pooler is refused either way, as after the first attempt.
   *
   * @param failFast whether the first failure ends the loop
   * @return this builder
   */
  public LeaderLoopBuilder failFast(boolean failFast) {
    this.failFast = failFast;
    return this;
  }

  /**
   * Adds a listener; listeners are called in the order added, one call at a time.
   *
   * @param listener the listener
   * @return this builder
   */
  public LeaderLoopBuilder listener(LeaderListener listener) {
    listeners.add(Objects.requireNonNull(listener, "listener"));
    return this;
  }

  /** Test seam: simulated time. */
  LeaderLoopBuilder timeSource(TimeSource time) {
    this.time = Objects.requireNonNull(time, "time");
    return this;
  }

  /**
   * Builds the loop.
   *
   * @return a new loop, not yet running
   * @throws IllegalStateException if options contradict each other (the message says which)
   */
  public LeaderLoop build() {
    return new LeaderLoop(settings());
  }

  /** The validated settings {@link #build()} makes a loop from; unit tests read them directly. */
  LoopSettings settings() {
    ServerBounds bounds =
        new ServerBounds(keepaliveIdle, keepaliveInterval, keepaliveCount, idleSessionTimeout);
    AdvisoryLock.Builder lock =
        AdvisoryLock.builder(dataSource, key).roundTripTimeout(roundTripTimeout);
    bounds.sessionSettings().forEach(lock::sessionSetting);
    if (candidateId != null) {
      lock.candidateId(candidateId);
    }
    return new LoopSettings(
        lock.build(),
        retryInterval,
        refreshInterval,
        retryJitter,
        failurePolicy,
        refreshTimeout,
        heartbeatInterval,
        selfFenceAfter,
        bounds,
        maxBackoff,
        closeTimeout,
        takeover,
        waitTimeout,
        failFast,
        listeners,
        time);
  }
}
