package dev.retsu.lock.micrometer;

import dev.retsu.lock.AttemptResult;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import dev.retsu.lock.micrometer.internal.Texts;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.LongTaskTimer;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Leadership metrics of one candidate of one lock, exported on every replica: whether it leads, how
 * often it tried and acquired, how long the current term runs, how refreshes go, and why terms
 * ended. Register it as the loop's listener and bind it to a registry:
 *
 * <pre>{@code
 * LeaderMetrics metrics = LeaderMetrics.builder(key, "worker-1").lockName("queue-state").build();
 * metrics.bindTo(registry);
 * LeaderLoop loop = LeaderLoop.builder(dataSource, key).candidateId("worker-1").listener(metrics).build();
 * }</pre>
 *
 * <p>Every meter carries the tags {@code lock} (the {@linkplain Builder#lockName name} you give, by
 * default the key in hex) and {@code candidate}, plus any {@linkplain Builder#tags extra tags}:
 *
 * <table>
 *   <caption>Meters</caption>
 *   <tr><th>name</th><th>type</th><th>more tags</th></tr>
 *   <tr><td>{@value Names#LEADER}</td><td>gauge 1/0</td><td>{@code state=leader|standby}</td></tr>
 *   <tr><td>{@value Names#ACQUISITIONS}</td><td>counter</td><td></td></tr>
 *   <tr><td>{@value Names#ATTEMPTS}</td><td>counter</td><td>{@code result}</td></tr>
 *   <tr><td>{@value Names#TERM}</td><td>long task timer</td><td></td></tr>
 *   <tr><td>{@value Names#REFRESH}</td><td>timer</td><td>{@code outcome=success|failure}</td></tr>
 *   <tr><td>{@value Names#LOST_TERMS}</td><td>counter</td><td>{@code reason}</td></tr>
 *   <tr><td>{@value Names#SELF_FENCED_TERMS}</td><td>counter</td><td></td></tr>
 * </table>
 *
 * <p>All series, including one per attempt result and per loss reason, are registered by {@link
 * #bindTo} so that rates start from zero. An instance binds to one registry (use a {@code
 * CompositeMeterRegistry} to export to several), and a registry holds at most one instance per lock
 * and candidate. Events before {@code bindTo} only move the leader state. {@link #close()} removes
 * exactly the meters this instance registered; events after it are ignored. Listener methods never
 * throw: a failure is logged at WARN.
 *
 * <p>Thread-safe. The loop calls the listener methods one at a time (possibly from its watchdog
 * thread); {@code bindTo} and {@code close} may run concurrently with them.
 */
public final class LeaderMetrics implements LeaderListener, MeterBinder, AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(LeaderMetrics.class);

  private final LockKey key;
  private final String lockName;
  private final String candidateId;
  private final Tags tags;
  private final String context;

  private final AtomicBoolean leader = new AtomicBoolean();
  private final AtomicReference<LongTaskTimer.Sample> termSample = new AtomicReference<>();
  private final AtomicBoolean warnedForeignTerm = new AtomicBoolean();
  private final ReentrantLock lifecycle = new ReentrantLock();

  /** The meters while bound; null before {@link #bindTo} and after {@link #close()}. */
  private volatile Bound bound;

  /** Guarded by {@link #lifecycle}. */
  private boolean closed;

  private LeaderMetrics(Builder b) {
    this.key = b.key;
    this.candidateId = b.candidateId;
    this.lockName = b.lockName != null ? b.lockName : Texts.hex(b.key);
    this.tags = Tags.of(Names.TAG_LOCK, lockName, Names.TAG_CANDIDATE, candidateId).and(b.tags);
    this.context = Texts.context(lockName, candidateId);
  }

  /**
   * Returns a builder.
   *
   * @param key the lock the loop contends for
   * @param candidateId the loop's candidate id, exported as the {@code candidate} tag
   * @return a builder
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if {@code candidateId} is empty
   */
  public static Builder builder(LockKey key, String candidateId) {
    return new Builder(key, candidateId);
  }

  /**
   * Returns metrics tagged with the key in hex and the candidate id.
   *
   * @param key the lock the loop contends for
   * @param candidateId the loop's candidate id
   * @return the metrics, not yet bound
   */
  public static LeaderMetrics of(LockKey key, String candidateId) {
    return builder(key, candidateId).build();
  }

  /**
   * Returns the value of the {@code lock} tag.
   *
   * @return the lock name, or the key in hex
   */
  public String lockName() {
    return lockName;
  }

  /**
   * Returns the value of the {@code candidate} tag.
   *
   * @return the candidate id
   */
  public String candidateId() {
    return candidateId;
  }

  /**
   * Returns the tags every meter of this instance carries.
   *
   * @return {@code lock}, {@code candidate} and the extra tags
   */
  public Tags tags() {
    return tags;
  }

  /**
   * Returns whether the last event said this candidate leads.
   *
   * @return true between {@code onAcquired} and {@code onLost}
   */
  public boolean isLeader() {
    return leader.get();
  }

  /**
   * Registers every meter on a registry.
   *
   * @param registry the registry
   * @throws IllegalStateException if this instance is bound already or closed, or the registry
   *     already holds leadership meters for this lock and candidate
   */
  @Override
  public void bindTo(MeterRegistry registry) {
    Objects.requireNonNull(registry, "registry");
    lifecycle.lock();
    try {
      if (closed) {
        throw new IllegalStateException(context + " LeaderMetrics is closed");
      }
      if (bound != null) {
        throw new IllegalStateException(
            context
                + " LeaderMetrics is bound to a registry already; use a CompositeMeterRegistry to"
                + " export to several");
      }
      if (!registry.find(Names.LEADER).tags(tags).gauges().isEmpty()) {
        throw new IllegalStateException(
            context
                + " the registry already has "
                + Names.LEADER
                + " meters for this lock and candidate; bind one LeaderMetrics per loop, or give"
                + " each a distinct lockName");
      }
      Bound b = new Bound(registry);
      if (leader.get()) {
        termSample.set(b.term.start());
      }
      bound = b;
    } finally {
      lifecycle.unlock();
    }
  }

  /**
   * Counts the attempt by result.
   *
   * @param result what happened
   * @param duration how long it took
   * @param error the failure, or null
   */
  @Override
  public void onAttempt(AttemptResult result, Duration duration, Throwable error) {
    safely("onAttempt", () -> ifBound(b -> b.attempts.get(result).increment()));
  }

  /**
   * Marks this candidate leader, counts the acquisition and starts timing the term.
   *
   * @param term the new term
   */
  @Override
  public void onAcquired(Term term) {
    safely(
        "onAcquired",
        () -> {
          checkTerm(term);
          leader.set(true);
          ifBound(
              b -> {
                b.acquisitions.increment();
                stop(termSample.getAndSet(b.term.start()));
              });
        });
  }

  /**
   * Times a successful refresh.
   *
   * @param term the term
   * @param duration how long the task ran
   */
  @Override
  public void onRefreshSucceeded(Term term, Duration duration) {
    safely("onRefreshSucceeded", () -> ifBound(b -> b.refreshSuccess.record(duration)));
  }

  /**
   * Times a failed refresh.
   *
   * @param term the term
   * @param duration how long the task ran
   * @param error what it threw
   */
  @Override
  public void onRefreshFailed(Term term, Duration duration, Throwable error) {
    safely("onRefreshFailed", () -> ifBound(b -> b.refreshFailure.record(duration)));
  }

  /**
   * Marks this candidate standby, counts the loss by reason (and self-fencing), and stops timing
   * the term.
   *
   * @param term the term that ended
   * @param reason why
   * @param cause the failure, or null
   */
  @Override
  public void onLost(Term term, LossReason reason, Throwable cause) {
    safely(
        "onLost",
        () -> {
          leader.set(false);
          stop(termSample.getAndSet(null));
          ifBound(
              b -> {
                b.lostTerms.get(reason).increment();
                if (reason == LossReason.SELF_FENCED) {
                  b.selfFenced.increment();
                }
              });
        });
  }

  /** Runs a listener body; a failure is logged, never thrown into the loop. */
  private void safely(String method, Runnable body) {
    try {
      body.run();
    } catch (RuntimeException e) {
      warn(method, e);
    }
  }

  /** Acts on the bound meters, if {@link #bindTo} has run and {@link #close} has not. */
  private void ifBound(java.util.function.Consumer<Bound> action) {
    Bound b = bound;
    if (b != null) {
      action.accept(b);
    }
  }

  /**
   * Removes exactly the meters this instance registered. Idempotent; never throws on a second call.
   * Later events are ignored.
   */
  @Override
  public void close() {
    lifecycle.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
      Bound b = bound;
      bound = null;
      stop(termSample.getAndSet(null));
      if (b != null) {
        for (Meter m : b.meters) {
          b.registry.remove(m);
        }
      }
    } finally {
      lifecycle.unlock();
    }
  }

  /**
   * Shows the tags.
   *
   * @return the metrics for people
   */
  @Override
  public String toString() {
    return "LeaderMetrics" + context;
  }

  private static void stop(LongTaskTimer.Sample sample) {
    if (sample != null) {
      sample.stop();
    }
  }

  private void checkTerm(Term term) {
    if (term != null
        && (!term.key().equals(key) || !term.candidateId().equals(candidateId))
        && warnedForeignTerm.compareAndSet(false, true)) {
      log.warn(
          "{} got a term of [lock={}, candidate={}]: this LeaderMetrics was built for another loop,"
              + " so its tags are wrong. Build one LeaderMetrics per loop.",
          context,
          term.key(),
          term.candidateId());
    }
  }

  private void warn(String method, RuntimeException e) {
    log.warn("{} LeaderMetrics.{} failed; the loop goes on", context, method, e);
  }

  /** The registered meters. Immutable after construction. */
  private final class Bound {
    final MeterRegistry registry;
    final List<Meter> meters = new ArrayList<>();
    final Counter acquisitions;
    final Map<AttemptResult, Counter> attempts = new EnumMap<>(AttemptResult.class);
    final LongTaskTimer term;
    final Timer refreshSuccess;
    final Timer refreshFailure;
    final Map<LossReason, Counter> lostTerms = new EnumMap<>(LossReason.class);
    final Counter selfFenced;

    Bound(MeterRegistry registry) {
      this.registry = registry;
      try {
        add(
            Gauge.builder(Names.LEADER, leader, l -> l.get() ? 1 : 0)
                .description("1 while this candidate leads the lock, else 0")
                .tags(tags)
                .tag(Names.TAG_STATE, Names.STATE_LEADER)
                .strongReference(true)
                .register(registry));
        add(
            Gauge.builder(Names.LEADER, leader, l -> l.get() ? 0 : 1)
                .description("1 while this candidate leads the lock, else 0")
                .tags(tags)
                .tag(Names.TAG_STATE, Names.STATE_STANDBY)
                .strongReference(true)
                .register(registry));
        acquisitions =
            add(
                Counter.builder(Names.ACQUISITIONS)
                    .description("Terms started: times this candidate acquired the lock")
                    .baseUnit(Names.UNIT_ACQUISITIONS)
                    .tags(tags)
                    .register(registry));
        for (AttemptResult r : AttemptResult.values()) {
          attempts.put(
              r,
              add(
                  Counter.builder(Names.ATTEMPTS)
                      .description("Standby attempts to take the lock, by result")
                      .baseUnit(Names.UNIT_ATTEMPTS)
                      .tags(tags)
                      .tag(Names.TAG_RESULT, Texts.tagValue(r))
                      .register(registry)));
        }
        term =
            add(
                LongTaskTimer.builder(Names.TERM)
                    .description("The current term: active while this candidate leads")
                    .tags(tags)
                    .register(registry));
        refreshSuccess = add(refreshTimer(Names.OUTCOME_SUCCESS));
        refreshFailure = add(refreshTimer(Names.OUTCOME_FAILURE));
        for (LossReason r : LossReason.values()) {
          lostTerms.put(
              r,
              add(
                  Counter.builder(Names.LOST_TERMS)
                      .description("Terms that ended, by reason")
                      .baseUnit(Names.UNIT_TERMS)
                      .tags(tags)
                      .tag(Names.TAG_REASON, Texts.tagValue(r))
                      .register(registry)));
        }
        selfFenced =
            add(
                Counter.builder(Names.SELF_FENCED_TERMS)
                    .description(
                        "Terms this candidate ended itself because it could not prove its session"
                            + " alive before its deadline")
                    .baseUnit(Names.UNIT_TERMS)
                    .tags(tags)
                    .register(registry));
      } catch (RuntimeException e) {
        // Leave nothing half-registered behind.
        for (Meter m : meters) {
          registry.remove(m);
        }
        throw e;
      }
    }

    private Timer refreshTimer(String outcome) {
      return Timer.builder(Names.REFRESH)
          .description("Leader refreshes (the leader task), by outcome")
          .tags(tags)
          .tag(Names.TAG_OUTCOME, outcome)
          .register(registry);
    }

    private <M extends Meter> M add(M meter) {
      meters.add(meter);
      return meter;
    }
  }

  /** Options of a {@link LeaderMetrics}. Not thread-safe. */
  public static final class Builder {

    private final LockKey key;
    private final String candidateId;
    private String lockName;
    private Tags tags = Tags.empty();

    private Builder(LockKey key, String candidateId) {
      this.key = Objects.requireNonNull(key, "key");
      this.candidateId = Objects.requireNonNull(candidateId, "candidateId");
      if (candidateId.isEmpty()) {
        throw new IllegalArgumentException("candidateId must not be empty");
      }
    }

    /**
     * Sets the value of the {@code lock} tag, a short stable name such as {@code queue-state}.
     * Defaults to the key in hex: {@code 0x0a1b2c3d4e5f6071}, or {@code 0x0000002a:0x00000007} for
     * a two-part key.
     *
     * @param lockName not empty
     * @return this builder
     */
    public Builder lockName(String lockName) {
      Objects.requireNonNull(lockName, "lockName");
      if (lockName.isBlank()) {
        throw new IllegalArgumentException(
            "lockName must not be blank, but was \"" + Texts.shorten(lockName) + "\"");
      }
      this.lockName = lockName;
      return this;
    }

    /**
     * Adds tags to every meter, e.g. the service name. They may not use the keys this class sets
     * ({@code lock}, {@code candidate}, {@code state}, {@code result}, {@code outcome}, {@code
     * reason}).
     *
     * @param tags extra tags
     * @return this builder
     */
    public Builder tags(Iterable<Tag> tags) {
      Objects.requireNonNull(tags, "tags");
      for (Tag t : tags) {
        if (RESERVED.contains(t.getKey())) {
          throw new IllegalArgumentException(
              "tags must not use the key " + t.getKey() + ", which LeaderMetrics sets itself");
        }
      }
      this.tags = this.tags.and(tags);
      return this;
    }

    /**
     * Builds the metrics; bind them with {@link LeaderMetrics#bindTo}.
     *
     * @return the metrics
     */
    public LeaderMetrics build() {
      return new LeaderMetrics(this);
    }

    private static final List<String> RESERVED =
        Collections.unmodifiableList(
            List.of(
                Names.TAG_LOCK,
                Names.TAG_CANDIDATE,
                Names.TAG_STATE,
                Names.TAG_RESULT,
                Names.TAG_OUTCOME,
                Names.TAG_REASON));
  }
}
