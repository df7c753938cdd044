package dev.retsu.lock.micrometer;

import dev.retsu.lock.AttemptResult;
import dev.retsu.lock.LeaderChange;
import dev.retsu.lock.LeaderInfo;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.ServerPath;
import dev.retsu.lock.Term;
import dev.retsu.lock.micrometer.internal.ListenerBinding;
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
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * Leadership metrics of one {@link LeaderLoop}, exported on every replica: whether it leads, how
 * often it tried and acquired, how long the current term runs, how refreshes go, and why terms
 * ended. Build it from the loop and bind it to a registry:
 *
 * <pre>{@code
 * LeaderLoop loop = LeaderLoop.builder(dataSource, key).candidateId("worker-1").build();
 * LeaderMetrics metrics = LeaderMetrics.builder(loop).lockName("queue-state").build();
 * metrics.bindTo(registry); // registers the meters and subscribes to the loop
 * }</pre>
 *
 * <p>The lock and the candidate come from the loop, so the tags always name the loop whose events
 * are counted. {@link #bindTo} subscribes with {@link LeaderLoop#addListener}, and {@link #close()}
 * unsubscribes. This class is not a {@link LeaderListener}: there is nothing to pass to the loop
 * builder's {@code listener(...)}, and no way to subscribe it twice or to another loop. The loop
 * may be bound before it starts or while it runs; if it leads at bind time, the gauges show it at
 * once.
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
 *   <tr><td>{@value Names#TERM_DURATION}</td><td>timer</td><td></td></tr>
 *   <tr><td>{@value Names#ACQUIRE_WAIT}</td><td>timer</td><td></td></tr>
 *   <tr><td>{@value Names#REFRESH}</td><td>timer</td><td>{@code outcome=success|failure}</td></tr>
 *   <tr><td>{@value Names#LOST_TERMS}</td><td>counter</td><td>{@code reason}</td></tr>
 *   <tr><td>{@value Names#SELF_FENCED_TERMS}</td><td>counter</td><td></td></tr>
 *   <tr><td>{@value Names#SESSION_PROXIED}</td><td>gauge 1/0/NaN</td><td></td></tr>
 *   <tr><td>{@value Names#HOLDER_FOREIGN}</td><td>gauge 1/0/NaN</td><td></td></tr>
 * </table>
 *
 * <p>The {@value Names#LEADER} gauge has two series. {@code state=leader} is 1 while the loop leads
 * a term. {@code state=standby} is 1 while the loop runs ({@link LeaderLoop.State#RUNNING}) and
 * does not lead. Both are 0 before the loop runs ({@link LeaderLoop.State#NEW}) and after it
 * stopped ({@link LeaderLoop.State#CLOSED CLOSED} or {@link LeaderLoop.State#FAILED FAILED}), so a
 * sum over the two says whether the candidate still takes part.
 *
 * <p>The {@value Names#HOLDER_FOREIGN} gauge follows the loop's leader watch (a {@link
 * dev.retsu.lock.LeaderWatch} given to the loop's builder with {@code leaderWatch}, whose changes
 * reach the loop's listeners as {@link LeaderListener#onLeaderChanged}): 1 while the watch last
 * reported the key held by a session outside the candidates' role ({@link LeaderInfo#foreign()}; no
 * candidate can lead until it lets go), 0 when it reported a candidate or nobody. It is NaN without
 * a watch, and after a bind until the watch's next report (the watch reports a key's holder when
 * the loop starts, then on every change).
 *
 * <p>{@value Names#TERM_DURATION} records each term this candidate led once it ends: from {@code
 * onAcquired} to {@code onLost}, on the registry's clock. {@value Names#ACQUIRE_WAIT} records how
 * long this candidate waited for each term it won: from the end of its previous term (or, for its
 * first term, the start of its first attempt) to {@code onAcquired}. A standby behind a healthy
 * leader waits as long as that leader leads, so its wait, recorded when it wins, includes the other
 * candidate's whole term. A term that was running at bind time is not recorded (its start predates
 * the registry's clock), and a wait that was running at bind time is timed from the bind.
 *
 * <p>All series, including one per attempt result and per loss reason, are registered by {@link
 * #bindTo} so that rates start from zero; the counters and timers count what happens after it. A
 * term already running at bind time is shown by the gauge and the term timer (timed from the bind)
 * but not counted as an acquisition. An instance binds to one registry (use a {@code
 * CompositeMeterRegistry} to export to several), and a registry holds at most one instance per lock
 * and candidate. {@link #close()} unsubscribes and removes exactly the meters this instance
 * registered. Failures while handling the loop's events are logged at WARN, never thrown into the
 * loop.
 *
 * <p>Thread-safe. The loop delivers events one at a time (possibly from its watchdog thread);
 * {@code bindTo} and {@code close} may run concurrently with them.
 */
public final class LeaderMetrics implements MeterBinder, AutoCloseable {

  private static final String LEADER_DESCRIPTION =
      "Leadership of this candidate: state=leader is 1 while its loop leads a term;"
          + " state=standby is 1 while its loop runs and does not lead (contending);"
          + " both are 0 before the loop runs and after it stopped (closed or failed)";

  private final LeaderLoop loop;
  private final String lockName;
  private final String candidateId;
  private final Tags tags;
  private final String context;
  private final ListenerBinding binding;

  /**
   * The term the loop leads as far as its events say, or null; written under the binding's lock,
   * read by the gauges.
   */
  private volatile Term term;

  /**
   * The path of the last term's session (kept after the term ends: it describes how this candidate
   * reaches the server), or null before the first term.
   */
  private volatile ServerPath path;

  /**
   * 1 when the loop's watch last reported a foreign holder, 0 for a candidate or nobody, NaN before
   * its first report since the bind.
   */
  private volatile double foreignHolder = Double.NaN;

  /** The meters while bound; null before {@link #bindTo} and after {@link #close()}. */
  private volatile Bound bound;

  /** Guarded by the binding's lock. */
  private LongTaskTimer.Sample termSample;

  /**
   * The registry's monotonic time when the current term was heard to start, or {@link #NOT_TIMED}
   * (no term, or one already running at bind time). Guarded by the binding's lock.
   */
  private long termStartedNanos = NOT_TIMED;

  /**
   * The registry's monotonic time when the current wait for a term began, or {@link #NOT_TIMED}
   * while leading or before the loop's first attempt. Guarded by the binding's lock.
   */
  private long waitStartedNanos = NOT_TIMED;

  private static final long NOT_TIMED = Long.MIN_VALUE;

  private LeaderMetrics(Builder b) {
    this.loop = b.loop;
    this.candidateId = b.loop.candidateId();
    this.lockName = b.lockName != null ? b.lockName : Texts.hex(b.loop.key());
    this.tags = Tags.of(Names.TAG_LOCK, lockName, Names.TAG_CANDIDATE, candidateId).and(b.tags);
    this.context = b.loop.logPrefix();
    this.binding =
        new ListenerBinding(
            "LeaderMetrics",
            context,
            ListenerBinding.source(loop::addListener, loop::removeListener),
            new Events());
  }

  /**
   * Returns a builder of metrics for one loop.
   *
   * @param loop the loop to measure; its key and candidate id become the tags
   * @return a builder
   * @throws NullPointerException if {@code loop} is null
   */
  public static Builder builder(LeaderLoop loop) {
    return new Builder(loop);
  }

  /**
   * Returns metrics for one loop, tagged with the key in hex and the candidate id.
   *
   * @param loop the loop to measure
   * @return the metrics, not yet bound (nor subscribed)
   * @throws NullPointerException if {@code loop} is null
   */
  public static LeaderMetrics of(LeaderLoop loop) {
    return builder(loop).build();
  }

  /**
   * Returns the loop these metrics measure.
   *
   * @return the loop
   */
  public LeaderLoop loop() {
    return loop;
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
   * Returns the value of the {@code candidate} tag: the loop's candidate id.
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
   * Returns whether the loop leads a term, as its events (or, at bind time, its current term) say.
   *
   * @return true from {@code onAcquired}, or a bind during a term, until that term's {@code onLost}
   */
  public boolean isLeader() {
    return term != null;
  }

  /**
   * Registers every meter on a registry and subscribes to the loop's events. If the loop leads a
   * term right now, the leader gauge shows 1 and the term timer runs from this call on.
   *
   * @param registry the registry
   * @throws IllegalStateException if this instance is bound already or closed, or the registry
   *     already holds leadership meters for this lock and candidate
   */
  @Override
  public void bindTo(MeterRegistry registry) {
    binding.bind(
        registry,
        r -> {
          if (!r.find(Names.LEADER).tags(tags).gauges().isEmpty()) {
            throw new IllegalStateException(
                context
                    + " the registry already has "
                    + Names.LEADER
                    + " meters for this lock and candidate; bind one LeaderMetrics per loop, or"
                    + " give each a distinct lockName");
          }
          bound = new Bound(r);
        },
        () -> {
          // A term read here is either still running or its onLost comes after this call.
          Term running = loop.currentTerm().orElse(null);
          if (running != null) {
            term = running;
            path = running.serverPath();
            termSample = bound.termTimer.start();
          } else if (loop.state() == LeaderLoop.State.RUNNING) {
            waitStartedNanos = bound.now(); // contending already: the wait is timed from here
          }
        });
  }

  /**
   * Unsubscribes from the loop and removes exactly the meters this instance registered. Idempotent;
   * never throws. An event already being delivered is ignored.
   */
  @Override
  public void close() {
    binding.close(
        () -> {
          bound = null;
          term = null;
          foreignHolder = Double.NaN;
          stop(termSample);
          termSample = null;
          termStartedNanos = NOT_TIMED;
          waitStartedNanos = NOT_TIMED;
        });
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

  /** Test seam: the listener {@link #bindTo} subscribes, to feed it made-up events. */
  LeaderListener listenerForTests() {
    return binding.listener();
  }

  /** 1 while the loop leads a term; 0 otherwise, and always once the loop has stopped. */
  private double leaderValue() {
    return term != null && !stopped(loop.state()) ? 1 : 0;
  }

  /** 1 while the loop runs and does not lead; 0 while it leads, before it runs, once stopped. */
  private double standbyValue() {
    return term == null && loop.state() == LeaderLoop.State.RUNNING ? 1 : 0;
  }

  /** 1 through a proxy, 0 direct, NaN before the first term or when not known. */
  private double proxiedValue() {
    ServerPath p = path;
    return p == ServerPath.PROXIED ? 1 : p == ServerPath.DIRECT ? 0 : Double.NaN;
  }

  /** 1 for a foreign holder, 0 for a candidate or nobody, NaN when the watch has not said. */
  private double foreignValue() {
    return foreignHolder;
  }

  private static boolean stopped(LeaderLoop.State state) {
    return state == LeaderLoop.State.CLOSED || state == LeaderLoop.State.FAILED;
  }

  /** The loop's events, turned into meter updates; the binding logs what they throw. */
  private final class Events implements LeaderListener {

    @Override
    public void onAttempt(AttemptResult result, Duration duration, Throwable error) {
      binding.lock().lock();
      try {
        Bound b = bound;
        if (b == null) {
          return;
        }
        b.attempts.get(result).increment();
        if (term == null && waitStartedNanos == NOT_TIMED) {
          // The first attempt of this candidate's first wait: the wait began when it did.
          waitStartedNanos = b.now() - duration.toNanos();
        }
      } finally {
        binding.lock().unlock();
      }
    }

    @Override
    public void onAcquired(Term acquired) {
      binding.lock().lock();
      try {
        if (binding.isClosed() || acquired.equals(term)) {
          return; // closed, or already caught up with this term in bindTo
        }
        term = acquired;
        path = acquired.serverPath();
        stop(termSample);
        termSample = null;
        Bound b = bound;
        if (b != null) {
          b.acquisitions.increment();
          termSample = b.termTimer.start();
          long now = b.now();
          if (waitStartedNanos != NOT_TIMED) {
            b.acquireWait.record(Math.max(0, now - waitStartedNanos), TimeUnit.NANOSECONDS);
          }
          termStartedNanos = now;
        }
        waitStartedNanos = NOT_TIMED;
      } finally {
        binding.lock().unlock();
      }
    }

    @Override
    public void onLeaderChanged(LeaderChange change) {
      binding.lock().lock();
      try {
        if (!binding.isClosed()) {
          foreignHolder = change.leader().map(LeaderInfo::foreign).orElse(false) ? 1 : 0;
        }
      } finally {
        binding.lock().unlock();
      }
    }

    @Override
    public void onRefreshSucceeded(Term refreshed, Duration duration) {
      ifBound(b -> b.refreshSuccess.record(duration));
    }

    @Override
    public void onRefreshFailed(Term refreshed, Duration duration, Throwable error) {
      ifBound(b -> b.refreshFailure.record(duration));
    }

    @Override
    public void onLost(Term lost, LossReason reason, Throwable cause) {
      binding.lock().lock();
      try {
        term = null;
        stop(termSample);
        termSample = null;
        Bound b = bound;
        if (b != null) {
          b.lostTerms.get(reason).increment();
          if (reason == LossReason.SELF_FENCED) {
            b.selfFenced.increment();
          }
          long now = b.now();
          if (termStartedNanos != NOT_TIMED) {
            b.termDuration.record(Math.max(0, now - termStartedNanos), TimeUnit.NANOSECONDS);
          }
          // Stepped down, the loop contends again from now; a loop that stopped never records it.
          waitStartedNanos = now;
        }
        termStartedNanos = NOT_TIMED;
      } finally {
        binding.lock().unlock();
      }
    }
  }

  /** Acts on the bound meters, if {@link #bindTo} has run and {@link #close} has not. */
  private void ifBound(java.util.function.Consumer<Bound> action) {
    Bound b = bound;
    if (b != null) {
      action.accept(b);
    }
  }

  private static void stop(LongTaskTimer.Sample sample) {
    if (sample != null) {
      sample.stop();
    }
  }

  /** The registered meters (each also remembered by the binding). Immutable after construction. */
  private final class Bound {
    final MeterRegistry registry;
    final Counter acquisitions;
    final Map<AttemptResult, Counter> attempts = new EnumMap<>(AttemptResult.class);
    final LongTaskTimer termTimer;
    final Timer termDuration;
    final Timer acquireWait;
    final Timer refreshSuccess;
    final Timer refreshFailure;
    final Map<LossReason, Counter> lostTerms = new EnumMap<>(LossReason.class);
    final Counter selfFenced;

    Bound(MeterRegistry registry) {
      this.registry = registry;
      // One description for both series: Prometheus shows one HELP line per name.
      add(
          Gauge.builder(Names.LEADER, LeaderMetrics.this, LeaderMetrics::leaderValue)
              .description(LEADER_DESCRIPTION)
              .tags(tags)
              .tag(Names.TAG_STATE, Names.STATE_LEADER)
              .strongReference(true)
              .register(registry));
      add(
          Gauge.builder(Names.LEADER, LeaderMetrics.this, LeaderMetrics::standbyValue)
              .description(LEADER_DESCRIPTION)
              .tags(tags)
              .tag(Names.TAG_STATE, Names.STATE_STANDBY)
              .strongReference(true)
              .register(registry));
      add(
          Gauge.builder(Names.SESSION_PROXIED, LeaderMetrics.this, LeaderMetrics::proxiedValue)
              .description(
                  "1 when this candidate's current or last term's session went through a proxy or"
                      + " pooler (then only idle_session_timeout and self-fencing bound a vanished"
                      + " leader), 0 when direct, NaN before its first term or when not known")
              .tags(tags)
              .strongReference(true)
              .register(registry));
      add(
          Gauge.builder(Names.HOLDER_FOREIGN, LeaderMetrics.this, LeaderMetrics::foreignValue)
              .description(
                  "1 while the loop's leader watch last reported the key held by a session outside"
                      + " the candidates' role (no candidate can lead until it lets go), 0 when it"
                      + " reported a candidate or nobody, NaN without a watch or before its first"
                      + " report")
              .tags(tags)
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
      termTimer =
          add(
              LongTaskTimer.builder(Names.TERM)
                  .description("The current term: active while this candidate leads")
                  .tags(tags)
                  .register(registry));
      termDuration =
          add(
              Timer.builder(Names.TERM_DURATION)
                  .description(
                      "Terms this candidate led, recorded when each ends: how long it lasted")
                  .tags(tags)
                  .register(registry));
      acquireWait =
          add(
              Timer.builder(Names.ACQUIRE_WAIT)
                  .description(
                      "Waits for leadership, recorded when this candidate wins a term: from the"
                          + " end of its previous term, or its first attempt, to the acquisition")
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
    }

    /** The registry's monotonic time, in nanoseconds. */
    long now() {
      return registry.config().clock().monotonicTime();
    }

    private Timer refreshTimer(String outcome) {
      return Timer.builder(Names.REFRESH)
          .description("Leader refreshes (the leader task), by outcome")
          .tags(tags)
          .tag(Names.TAG_OUTCOME, outcome)
          .register(registry);
    }

    private <M extends Meter> M add(M meter) {
      return binding.add(meter);
    }
  }

  /** Options of a {@link LeaderMetrics}. Not thread-safe. */
  public static final class Builder {

    private final LeaderLoop loop;
    private String lockName;
    private Tags tags = Tags.empty();

    private Builder(LeaderLoop loop) {
      this.loop = Objects.requireNonNull(loop, "loop");
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
