package dev.retsu.lock.micrometer;

import dev.retsu.lock.LeaderChange;
import dev.retsu.lock.LeaderGroup;
import dev.retsu.lock.LeaderInfo;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import dev.retsu.lock.micrometer.internal.ListenerBinding;
import dev.retsu.lock.micrometer.internal.Texts;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.time.Duration;
import java.time.Instant;
import java.util.EnumMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Metrics of one {@link LeaderGroup} member, within a series budget. Build it from the group and
 * bind it to a registry, as {@link LeaderMetrics} does for a loop:
 *
 * <pre>{@code
 * LeaderGroupMetrics metrics = LeaderGroupMetrics.of(group);
 * metrics.bindTo(registry); // registers the meters and subscribes to the group
 * }</pre>
 *
 * <p>Every meter carries the tags {@code group} (the group's name) and {@code candidate}, plus any
 * {@linkplain Builder#tags extra tags}:
 *
 * <table>
 *   <caption>Meters</caption>
 *   <tr><th>name</th><th>type</th><th>more tags</th></tr>
 *   <tr><td>{@value Names#GROUP_KEYS_HELD}</td><td>gauge</td><td></td></tr>
 *   <tr><td>{@value Names#GROUP_KEYS}</td><td>gauge</td><td></td></tr>
 *   <tr><td>{@value Names#GROUP_MEMBERS}</td><td>gauge</td><td></td></tr>
 *   <tr><td>{@value Names#GROUP_SESSIONS}</td><td>gauge</td><td></td></tr>
 *   <tr><td>{@value Names#GROUP_KEYS_FOREIGN}</td><td>gauge, NaN without a watch</td><td></td></tr>
 *   <tr><td>{@value Names#GROUP_REBALANCES}</td><td>function counter</td><td></td></tr>
 *   <tr><td>{@value Names#GROUP_ACQUISITIONS}</td><td>function counter</td><td></td></tr>
 *   <tr><td>{@value Names#GROUP_LOST_TERMS}</td><td>counter</td><td>{@code reason}</td></tr>
 *   <tr><td>{@value Names#GROUP_TERM_DURATION}</td><td>timer</td><td></td></tr>
 *   <tr><td>{@value Names#GROUP_KEY_LEADER}</td><td>gauge 1/0</td><td>{@code key}</td></tr>
 *   <tr><td>{@value Names#GROUP_KEY_TERM}</td><td>gauge, seconds</td><td>{@code key}</td></tr>
 * </table>
 *
 * <p><b>Series budget.</b> The per-key gauges ({@value Names#GROUP_KEY_LEADER}, {@value
 * Names#GROUP_KEY_TERM}) are registered only when the group has at most {@link
 * Builder#perKeyBudget(int) perKeyBudget} keys (default {@value #DEFAULT_PER_KEY_BUDGET}): two
 * series per key on every member. Above it the member exports only the fixed series (7 gauges and
 * counters, one timer, and one lost-terms counter per reason), whatever the number of keys.
 *
 * <p>{@value Names#GROUP_TERM_DURATION} records each key term this member led once it ends, from
 * its {@code onAcquired} to its {@code onLost} on the registry's clock, for all keys in one series
 * (a term that was running at bind time is not recorded).
 *
 * <p>{@value Names#GROUP_KEYS_FOREIGN} follows the group's leader watch (a {@link
 * dev.retsu.lock.LeaderWatch} given to the group's builder with {@code leaderWatch}, whose changes
 * reach the group's listeners as {@link LeaderListener#onLeaderChanged}): how many of the group's
 * keys it last reported held by a session outside the candidates' role ({@link
 * LeaderInfo#foreign()}). It is NaN without a watch, and after a bind until the watch's next
 * report.
 *
 * <p>Thread-safe. {@link #close()} unsubscribes and removes exactly the meters this instance
 * registered.
 */
public final class LeaderGroupMetrics implements MeterBinder, AutoCloseable {

  /** Default most keys for which per-key series are exported: 100. */
  public static final int DEFAULT_PER_KEY_BUDGET = 100;

  private final LeaderGroup group;
  private final Tags tags;
  private final int perKeyBudget;
  private final String context;
  private final ListenerBinding binding;
  private volatile Bound bound;

  /** The keys the group's watch last reported held by a foreign session. */
  private final Set<LockKey> foreignKeys = ConcurrentHashMap.newKeySet();

  /** The registry's monotonic time at each running key term's start, as heard since the bind. */
  private final Map<LockKey, Long> termStarts = new ConcurrentHashMap<>();

  /** Whether the group's watch has reported a change since the bind. */
  private volatile boolean watchHeard;

  private LeaderGroupMetrics(Builder b) {
    this.group = b.group;
    this.perKeyBudget = b.perKeyBudget;
    this.tags =
        Tags.of(Names.TAG_GROUP, group.name(), Names.TAG_CANDIDATE, group.candidateId())
            .and(b.tags);
    this.context = "[group=" + group.name() + ", candidate=" + group.candidateId() + "]";
    this.binding =
        new ListenerBinding(
            "LeaderGroupMetrics",
            context,
            ListenerBinding.source(group::addListener, group::removeListener),
            new Events());
  }

  /**
   * Returns metrics for one group member with the default series budget.
   *
   * @param group the group
   * @return the metrics, not yet bound
   */
  public static LeaderGroupMetrics of(LeaderGroup group) {
    return builder(group).build();
  }

  /**
   * Returns a builder.
   *
   * @param group the group
   * @return a builder
   */
  public static Builder builder(LeaderGroup group) {
    return new Builder(group);
  }

  /**
   * Returns whether per-key series are exported (the group has at most {@code perKeyBudget} keys).
   *
   * @return true within the budget
   */
  public boolean perKeySeries() {
    return group.keys().size() <= perKeyBudget;
  }

  /**
   * Returns the tags every meter of this instance carries.
   *
   * @return {@code group}, {@code candidate} and the extra tags
   */
  public Tags tags() {
    return tags;
  }

  /**
   * Registers the meters and subscribes to the group's events.
   *
   * @param registry the registry
   * @throws IllegalStateException if bound already or closed, or the registry already holds this
   *     group member's meters
   */
  @Override
  public void bindTo(MeterRegistry registry) {
    binding.bind(
        registry,
        r -> {
          if (!r.find(Names.GROUP_KEYS_HELD).tags(tags).gauges().isEmpty()) {
            throw new IllegalStateException(
                context + " the registry already has group meters for this group and candidate");
          }
          bound = new Bound(r);
        },
        () -> {});
  }

  /** Unsubscribes and removes the meters this instance registered. Idempotent; never throws. */
  @Override
  public void close() {
    binding.close(
        () -> {
          bound = null;
          watchHeard = false;
          foreignKeys.clear();
          termStarts.clear();
        });
  }

  @Override
  public String toString() {
    return "LeaderGroupMetrics" + context;
  }

  /** Keys held by a foreign session as the watch last reported; NaN before its first report. */
  private double foreignValue() {
    return watchHeard ? foreignKeys.size() : Double.NaN;
  }

  private double termSeconds(LockKey key) {
    return group
        .currentTerm(key)
        .map(t -> Duration.between(t.start(), Instant.now()).toMillis() / 1000.0)
        .orElse(0.0);
  }

  /** The group's events; the binding logs what they throw. */
  private final class Events implements LeaderListener {
    @Override
    public void onAcquired(Term term) {
      Bound b = bound;
      if (b != null) {
        termStarts.put(term.key(), b.now());
      }
    }

    @Override
    public void onLost(Term term, LossReason reason, Throwable cause) {
      Long started = termStarts.remove(term.key());
      Bound b = bound;
      if (b != null) {
        b.lostTerms.get(reason).increment();
        if (started != null) {
          b.termDuration.record(Math.max(0, b.now() - started), TimeUnit.NANOSECONDS);
        }
      }
    }

    @Override
    public void onLeaderChanged(LeaderChange change) {
      binding.lock().lock();
      try {
        if (binding.isClosed()) {
          return;
        }
        if (change.leader().map(LeaderInfo::foreign).orElse(false)) {
          foreignKeys.add(change.key());
        } else {
          foreignKeys.remove(change.key());
        }
        watchHeard = true;
      } finally {
        binding.lock().unlock();
      }
    }
  }

  /** The registered meters (each remembered by the binding, which removes them). */
  private final class Bound {
    final MeterRegistry registry;
    final Map<LossReason, Counter> lostTerms = new EnumMap<>(LossReason.class);
    final Timer termDuration;

    Bound(MeterRegistry registry) {
      this.registry = registry;
      termDuration =
          binding.add(
              Timer.builder(Names.GROUP_TERM_DURATION)
                  .description(
                      "Key terms this member led, recorded when each ends: how long it lasted")
                  .tags(tags)
                  .register(registry));
      gauge(Names.GROUP_KEYS_HELD, "Keys this member leads right now", g -> g.heldCount());
      gauge(Names.GROUP_KEYS, "Keys in the group", g -> g.keys().size());
      gauge(
          Names.GROUP_MEMBERS,
          "Members of the group at this member's last membership read",
          g -> g.members());
      gauge(Names.GROUP_SESSIONS, "Sessions this member has open", g -> g.openSessions());
      binding.add(
          Gauge.builder(
                  Names.GROUP_KEYS_FOREIGN,
                  LeaderGroupMetrics.this,
                  LeaderGroupMetrics::foreignValue)
              .description(
                  "Keys the group's leader watch last reported held by a session outside the"
                      + " candidates' role (no member can lead them until it lets go); NaN without"
                      + " a watch or before its first report")
              .tags(tags)
              .strongReference(true)
              .register(registry));
      binding.add(
          FunctionCounter.builder(Names.GROUP_REBALANCES, group, g -> g.rebalances())
              .description("Keys this member yielded to rebalance the group")
              .tags(tags)
              .register(registry));
      binding.add(
          FunctionCounter.builder(Names.GROUP_ACQUISITIONS, group, g -> g.acquisitions())
              .description("Key terms this member started")
              .tags(tags)
              .register(registry));
      for (LossReason r : LossReason.values()) {
        Counter c =
            Counter.builder(Names.GROUP_LOST_TERMS)
                .description("Key terms of this member that ended, by reason")
                .baseUnit(Names.UNIT_TERMS)
                .tags(tags)
                .tag(Names.TAG_REASON, Texts.tagValue(r))
                .register(registry);
        binding.add(c);
        lostTerms.put(r, c);
      }
      if (perKeySeries()) {
        for (LockKey k : group.keys()) {
          Tag key = Tag.of(Names.TAG_KEY, Texts.hex(k));
          binding.add(
              Gauge.builder(
                      Names.GROUP_KEY_LEADER, group, g -> g.currentTerm(k).isPresent() ? 1 : 0)
                  .description("1 while this member leads the key")
                  .tags(tags)
                  .tag(key.getKey(), key.getValue())
                  .strongReference(true)
                  .register(registry));
          binding.add(
              Gauge.builder(Names.GROUP_KEY_TERM, LeaderGroupMetrics.this, m -> m.termSeconds(k))
                  .description("Seconds the current term of the key has run; 0 when not leading")
                  .baseUnit(Names.UNIT_SECONDS)
                  .tags(tags)
                  .tag(key.getKey(), key.getValue())
                  .strongReference(true)
                  .register(registry));
        }
      }
    }

    /** The registry's monotonic time, in nanoseconds. */
    long now() {
      return registry.config().clock().monotonicTime();
    }

    private void gauge(
        String name, String description, java.util.function.ToDoubleFunction<LeaderGroup> f) {
      binding.add(
          Gauge.builder(name, group, f)
              .description(description)
              .tags(tags)
              .strongReference(true)
              .register(registry));
    }
  }

  /** Options of {@link LeaderGroupMetrics}. Not thread-safe. */
  public static final class Builder {
    private final LeaderGroup group;
    private int perKeyBudget = DEFAULT_PER_KEY_BUDGET;
    private Tags tags = Tags.empty();

    private Builder(LeaderGroup group) {
      this.group = Objects.requireNonNull(group, "group");
    }

    /**
     * Sets the most keys for which per-key series are exported (two per key). Defaults to 100.
     *
     * @param budget 0 (never) to 100,000
     * @return this builder
     */
    public Builder perKeyBudget(int budget) {
      if (budget < 0 || budget > LeaderGroup.MAX_KEYS) {
        throw new IllegalArgumentException(
            "perKeyBudget must be within 0.." + LeaderGroup.MAX_KEYS + ", but was " + budget);
      }
      this.perKeyBudget = budget;
      return this;
    }

    /**
     * Adds tags to every meter.
     *
     * @param extra the tags
     * @return this builder
     */
    public Builder tags(Iterable<Tag> extra) {
      this.tags = this.tags.and(Objects.requireNonNull(extra, "tags"));
      return this;
    }

    /**
     * Builds the metrics, not yet bound.
     *
     * @return the metrics
     */
    public LeaderGroupMetrics build() {
      return new LeaderGroupMetrics(this);
    }
  }
}
