package dev.retsu.lock;

import dev.retsu.lock.internal.Checks;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * Options of a {@link LeaderLoop}; every option has a default ({@code LeaderLoop.DEFAULT_*}) and is
 * checked when set, with a message naming the value and the rule. {@link #build()} checks the rules
 * that tie options together and copies everything into an immutable loop. Not thread-safe.
 */
public final class LeaderLoopBuilder {

  private final DataSource dataSource;
  private final LockKey key;
  private String candidateId;
  private Duration retryInterval = LeaderLoop.DEFAULT_RETRY_INTERVAL;
  private Duration refreshInterval = LeaderLoop.DEFAULT_REFRESH_INTERVAL;
  private double retryJitter = LeaderLoop.DEFAULT_RETRY_JITTER;
  private FailurePolicy failurePolicy = LeaderLoop.DEFAULT_FAILURE_POLICY;
  private Duration refreshTimeout = LeaderLoop.DEFAULT_REFRESH_TIMEOUT;
  private Duration heartbeatInterval = LeaderLoop.DEFAULT_HEARTBEAT_INTERVAL;
  private Duration selfFenceAfter = LeaderLoop.DEFAULT_SELF_FENCE_AFTER;
  private Duration keepaliveIdle = LeaderLoop.DEFAULT_KEEPALIVE_IDLE;
  private Duration keepaliveInterval = LeaderLoop.DEFAULT_KEEPALIVE_INTERVAL;
  private int keepaliveCount = LeaderLoop.DEFAULT_KEEPALIVE_COUNT;
  private Duration idleSessionTimeout = LeaderLoop.DEFAULT_IDLE_SESSION_TIMEOUT;
  private Duration roundTripTimeout = AdvisoryLock.DEFAULT_ROUND_TRIP_TIMEOUT;
  private Duration maxBackoff = LeaderLoop.DEFAULT_MAX_BACKOFF;
  private Duration closeTimeout = LeaderLoop.DEFAULT_CLOSE_TIMEOUT;
  private TakeoverMode takeover = LeaderLoop.DEFAULT_TAKEOVER;
  private Duration waitTimeout = LeaderLoop.DEFAULT_WAIT_TIMEOUT;
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
    ServerBounds bounds =
        new ServerBounds(keepaliveIdle, keepaliveInterval, keepaliveCount, idleSessionTimeout);
    AdvisoryLock.Builder lock =
        AdvisoryLock.builder(dataSource, key).roundTripTimeout(roundTripTimeout);
    bounds.sessionSettings().forEach(lock::sessionSetting);
    if (candidateId != null) {
      lock.candidateId(candidateId);
    }
    return new LeaderLoop(
        new LoopSettings(
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
            listeners,
            time));
  }
}
