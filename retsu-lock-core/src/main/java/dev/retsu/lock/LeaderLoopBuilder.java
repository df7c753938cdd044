package dev.retsu.lock;

import dev.retsu.lock.internal.Checks;
import dev.retsu.lock.internal.Diagnostics;
import dev.retsu.lock.internal.loop.LoopSettings;
import dev.retsu.lock.internal.session.SessionOpener;
import dev.retsu.lock.internal.term.TermOptions;
import java.time.Duration;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * Options of a {@link LeaderLoop}: the loop's own (how a standby contends, what a failed term does)
 * here, the ones every recipe's terms share in {@link TermOptionsBuilder}. Every option has a
 * default (the {@code DEFAULT_*} constants) and is checked when set, with a message naming the
 * value and the rule. {@link #build()} checks the rules that tie options together and copies
 * everything into an immutable loop. Not thread-safe.
 */
public final class LeaderLoopBuilder extends TermOptionsBuilder<LeaderLoopBuilder> {

  /** Default wait between standby attempts: 15 seconds. */
  public static final Duration DEFAULT_RETRY_INTERVAL = Duration.ofSeconds(15);

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

  /** Default longest wait between failed terms under {@link FailurePolicy#STEP_DOWN}: 5 minutes. */
  public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofMinutes(5);

  /** Default takeover mode: {@link TakeoverMode#POLL}. */
  public static final TakeoverMode DEFAULT_TAKEOVER = TakeoverMode.POLL;

  /**
   * Default longest single wait in {@link TakeoverMode#WAIT} before it is re-armed: 60 seconds. A
   * waiting statement holds a snapshot, so a standby holds back VACUUM's horizon for up to this
   * long; each re-arm leaves one {@code lock_timeout} ERROR line in the server log and each wait
   * runs one deadlock check. 60 s bounds the horizon at one minute for 60 re-arms an hour per
   * standby (the trade-off table is in docs/operations.md); the waiting client's own keepalives,
   * not the re-arm, notice a dead server.
   */
  public static final Duration DEFAULT_WAIT_TIMEOUT = Duration.ofSeconds(60);

  private final LockKey key;
  Duration retryInterval = DEFAULT_RETRY_INTERVAL;
  private double retryJitter = DEFAULT_RETRY_JITTER;
  private FailurePolicy failurePolicy = DEFAULT_FAILURE_POLICY;
  private Duration maxBackoff = DEFAULT_MAX_BACKOFF;
  private TakeoverMode takeover = DEFAULT_TAKEOVER;
  private Duration waitTimeout = DEFAULT_WAIT_TIMEOUT;
  private boolean preferred;
  private Duration takeoverDelay = Duration.ZERO;
  private boolean takeoverDelayFromSelfFence;

  LeaderLoopBuilder(DataSource dataSource, LockKey key) {
    super(dataSource, DEFAULT_REFRESH_TIMEOUT);
    this.key = Objects.requireNonNull(key, "key");
  }

  /**
   * Sets the wait between standby attempts in {@link TakeoverMode#POLL}. Defaults to 15 seconds. It
   * is how long a POLL standby may take to notice that the key is free: lower it for a faster
   * takeover at one short statement per attempt, or use {@link TakeoverMode#WAIT}.
   *
   * @param interval positive
   * @return this builder
   */
  public LeaderLoopBuilder retryInterval(Duration interval) {
    this.retryInterval = Checks.positive("retryInterval", interval);
    return this;
  }

  /**
   * The fast-failover settings of {@link TermOptionsBuilder#fastFailover()}, and a retry every 500
   * ms, so a POLL standby takes over within about 3 seconds of a partition or a pause too.
   *
   * @return this builder
   */
  @Override
  public LeaderLoopBuilder fastFailover() {
    super.fastFailover();
    return retryInterval(FAST_RETRY_INTERVAL);
  }

  /** {@link #fastFailover()}'s retry interval: 500 ms. */
  public static final Duration FAST_RETRY_INTERVAL = Duration.ofMillis(500);

  /**
   * Sets the jitter of standby waits: each is drawn uniformly from retryInterval × (1 − jitter) to
   * retryInterval, so that standbys started together do not contend in step while retryInterval
   * stays the longest wait. Defaults to 0.1. Raise it when many standbys start together (a fleet
   * restart) and their attempts still arrive in bursts.
   *
   * @param jitter within [0, 1)
   * @return this builder
   */
  public LeaderLoopBuilder retryJitter(double jitter) {
    this.retryJitter = Checks.fraction("retryJitter", jitter);
    return this;
  }

  /**
   * Sets what a failed term does. Defaults to {@link FailurePolicy#STEP_DOWN}: contend again.
   * {@link FailurePolicy#EXIT} suits a process whose supervisor (Kubernetes, systemd) should
   * restart it after a lost term, so that no state of the old term survives.
   *
   * @param policy the policy
   * @return this builder
   */
  public LeaderLoopBuilder failurePolicy(FailurePolicy policy) {
    this.failurePolicy = Objects.requireNonNull(policy, "failurePolicy");
    return this;
  }

  /**
   * Sets the longest wait between failed terms under {@link FailurePolicy#STEP_DOWN} (the wait
   * doubles from retryInterval). Defaults to 5 minutes. Lower it when a candidate must come back
   * sooner after repeated failures (a database that flaps), at the cost of more attempts.
   *
   * @param max positive
   * @return this builder
   */
  public LeaderLoopBuilder maxBackoff(Duration max) {
    this.maxBackoff = Checks.positive("maxBackoff", max);
    return this;
  }

  /**
   * Sets how a standby takes over. Defaults to {@link TakeoverMode#POLL}: no connection held
   * between attempts. {@link TakeoverMode#WAIT} queues in the server on one connection and takes
   * over within milliseconds of the release, for work that must not pause.
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
   * Defaults to 60 seconds. The waiting statement holds a snapshot, so this is also the oldest
   * horizon the standby holds back from VACUUM; every re-arm leaves one {@code lock_timeout} ERROR
   * line in the server log and every wait runs PostgreSQL's deadlock check once (after {@code
   * deadlock_timeout}), so short waits cost the server; the waiting client's socket keepalives, not
   * this timeout, notice a dead server.
   *
   * @param timeout at least 10 ms
   * @return this builder
   */
  public LeaderLoopBuilder waitTimeout(Duration timeout) {
    this.waitTimeout = Checks.atLeast("waitTimeout", timeout, Duration.ofMillis(10));
    return this;
  }

  /**
   * Marks this candidate preferred: its standby waits in the server's queue ({@link
   * TakeoverMode#WAIT}, whatever {@link #takeover} says) on a session whose {@code
   * application_name} is {@code retsu-lock-preferred:<candidate>}, and a leader that is not
   * preferred hands over to it at its next refresh ({@link LossReason#YIELDED}: its work stops,
   * {@code onLost}, then the release, which the server grants to the waiting preferred session
   * first). A preferred leader never yields to another preferred candidate. So WAIT and POLL act as
   * priority tiers below it: a rolling deploy starts the new instance preferred, and it leads
   * within one {@code refreshInterval}, before the old instance stops. Defaults to false.
   *
   * @param preferred whether this candidate is preferred
   * @return this builder
   */
  public LeaderLoopBuilder preferred(boolean preferred) {
    this.preferred = preferred;
    return this;
  }

  /**
   * Turns on the lock-delay after an abnormal loss: when a new term cannot tell that the previous
   * one ended gracefully (a crash, a terminated session, a POLL standby, which cannot tell), it
   * waits {@code delay} before {@code onAcquired} and its first refresh, still proving its session
   * meanwhile; after a graceful release (a {@code released} notice for the key reached its WAIT
   * standby's session before the grant) it does not wait. It protects downstream systems that
   * cannot check fencing tokens: by then a previous leader that lost its session has stopped, if
   * its {@code selfFenceAfter} is at most {@code delay}. Off by default.
   *
   * @param delay positive; at least the previous leader's {@code selfFenceAfter} to cover it
   * @return this builder
   */
  public LeaderLoopBuilder takeoverDelay(Duration delay) {
    this.takeoverDelay = Checks.positive("takeoverDelay", delay);
    this.takeoverDelayFromSelfFence = false;
    return this;
  }

  /**
   * Turns on the lock-delay after an abnormal loss ({@link #takeoverDelay(Duration)}) with this
   * builder's {@code selfFenceAfter} as the delay (8 seconds by default, 1 second with {@link
   * #fastFailover()}): candidates built alike then never act while a previous leader may.
   *
   * @return this builder
   */
  public LeaderLoopBuilder takeoverDelay() {
    this.takeoverDelayFromSelfFence = true;
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
    String id = id();
    TermOptions term = termOptions(id);
    SessionOpener.Spec spec = spec(key, Diagnostics.context(key, id), term);
    Duration delay = takeoverDelayFromSelfFence ? term.selfFenceAfter() : takeoverDelay;
    return new LoopSettings(
        term,
        spec,
        retryInterval,
        retryJitter,
        failurePolicy,
        maxBackoff,
        preferred ? TakeoverMode.WAIT : takeover,
        waitTimeout,
        preferred,
        delay);
  }
}
