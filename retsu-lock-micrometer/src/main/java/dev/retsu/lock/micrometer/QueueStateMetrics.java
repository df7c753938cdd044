package dev.retsu.lock.micrometer;

import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import dev.retsu.lock.micrometer.internal.ListenerBinding;
import dev.retsu.lock.micrometer.internal.QueueCell;
import dev.retsu.lock.micrometer.internal.QueueFolding;
import dev.retsu.lock.micrometer.internal.Texts;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.ToDoubleFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Queue-state gauges that only the current leader exports, as the Retsu state collector does.
 *
 * <p>Build it from the loop, bind it to a registry, and call {@link #record(QueueStateSnapshot)}
 * from the leader task with what the refresh collected:
 *
 * <pre>{@code
 * QueueStateMetrics queueMetrics = QueueStateMetrics.builder(loop).maxQueueSeries(200).build();
 * queueMetrics.bindTo(registry); // subscribes to the loop; registers nothing yet
 * // in the loop's task:
 * queueMetrics.record(snapshot);
 * }</pre>
 *
 * <p>{@link #bindTo} subscribes to the loop's events with {@link LeaderLoop#addListener}, and
 * {@link #close()} unsubscribes. This class is not a {@link LeaderListener}: there is nothing to
 * pass to the loop builder's {@code listener(...)}, and no way to subscribe it twice or to another
 * loop. If the loop leads when it is bound, that term counts as started: the next {@code record}
 * exports.
 *
 * <h2>Only the leader exports</h2>
 *
 * <p>{@link #bindTo} registers nothing. The gauges are registered on the first {@code record} of a
 * term, so a replica that has not led exports no queue series at all, not even zeros. When the term
 * ends ({@code onLost}) every one of them is removed before the loop releases the lock, so a former
 * leader exports no stale copy; the next term's first {@code record} brings them back. <b>A {@code
 * record} call while the loop leads no term (this replica is not leader, or the term just ended,
 * e.g. it was self-fenced while the refresh ran) registers and changes nothing and returns {@code
 * false}.</b> Alert on the absence of {@value Names#QUEUE_STATE_COLLECTION_SUCCESS} across all
 * targets to catch "nobody collects".
 *
 * <h2>Meters</h2>
 *
 * <table>
 *   <caption>Meters (Prometheus names)</caption>
 *   <tr><th>name</th><th>tags</th><th>value</th></tr>
 *   <tr><td>{@code queue_messages_ready}</td><td>{@code queue}</td><td>messages ready</td></tr>
 *   <tr><td>{@code queue_messages_in_flight}</td><td>{@code queue}</td><td>messages leased</td></tr>
 *   <tr><td>{@code queue_messages_scheduled}</td><td>{@code queue}</td><td>messages delayed</td></tr>
 *   <tr><td>{@code queue_messages_dead}</td><td>{@code queue}</td><td>messages dead-lettered</td></tr>
 *   <tr><td>{@code queue_oldest_ready_age_seconds}</td><td>{@code queue}</td>
 *       <td>age of the oldest ready message</td></tr>
 *   <tr><td>{@code queue_state_collection_success}</td><td></td>
 *       <td>1 after a good collection, 0 after a failed one</td></tr>
 *   <tr><td>{@code queue_state_collection_duration_seconds}</td><td></td>
 *       <td>duration of the last good collection</td></tr>
 *   <tr><td>{@code queue_state_collection_last_success_timestamp_seconds}</td><td></td>
 *       <td>when the last good collection was recorded, seconds since the epoch</td></tr>
 *   <tr><td>{@code queue_state_folded_queues}</td><td></td>
 *       <td>queues folded into {@code queue="_other"}</td></tr>
 * </table>
 *
 * <p>A failed collection is reported by {@link #recordFailure(Throwable)} or, automatically, by the
 * loop's failed refresh ({@code onRefreshFailed}): the success gauge drops to 0 while the term
 * lasts; the queue gauges keep their last values. A failure before the term's first good {@code
 * record} registers nothing.
 *
 * <h2>Series budget</h2>
 *
 * <p>At most {@link Builder#maxQueueSeries(int) maxQueueSeries} queues (default {@value
 * #DEFAULT_MAX_QUEUE_SERIES}) get their own series: those with the largest {@linkplain
 * QueueState#backlog() backlog}, ties broken by name, so the choice is the same whatever order the
 * snapshot lists them in. The rest are summed into one overflow series {@code queue="_other"}
 * (counts summed, age the largest), and {@code queue_state_folded_queues} says how many were
 * folded. A queue missing from a snapshot loses its series.
 *
 * <p>Each kept queue has one value cell, strongly referenced by its gauges and by this object, that
 * is updated in place; the rows go through {@link MultiGauge#register(Iterable, boolean)} so that
 * queues that vanish lose their series. Rows already registered are not re-registered ({@code
 * overwrite=false}): re-registering removes a series and adds it back on every refresh, and a
 * scrape that lands in between would miss it. When the kept queues are the same as last time, no
 * registration happens at all.
 *
 * <p>Thread-safe: {@code record}, {@code recordFailure}, the loop's events, {@code bindTo} and
 * {@code close} are serialised by a lock, so a term that ends on the watchdog thread while the loop
 * thread records cannot leave gauges behind. Scrapes read without locking. Failures while handling
 * the loop's events are logged at WARN, never thrown into the loop.
 */
public final class QueueStateMetrics implements MeterBinder, AutoCloseable {

  /** Default of {@link Builder#maxQueueSeries(int)}: 100 queues with their own series. */
  public static final int DEFAULT_MAX_QUEUE_SERIES = 100;

  private static final Logger log = LoggerFactory.getLogger(QueueStateMetrics.class);

  private final LeaderLoop loop;
  private final int maxQueueSeries;
  private final Tags tags;
  private final Clock clock;
  private final String context;
  private final ListenerBinding binding;
  private final ReentrantLock lock;

  // All guarded by lock (the binding's).
  private Term term;
  private Exported exported;
  private boolean warnedNoTerm;

  private QueueStateMetrics(Builder b) {
    this.loop = b.loop;
    this.maxQueueSeries = b.maxQueueSeries;
    this.tags = b.tags;
    this.clock = b.clock;
    this.context = b.loop.logPrefix();
    this.binding =
        new ListenerBinding(
            "QueueStateMetrics",
            context,
            ListenerBinding.source(loop::addListener, loop::removeListener),
            new Events());
    this.lock = binding.lock();
  }

  /**
   * Returns a builder of queue-state metrics for one loop.
   *
   * @param loop the loop whose terms decide when this replica exports
   * @return a builder with the defaults
   * @throws NullPointerException if {@code loop} is null
   */
  public static Builder builder(LeaderLoop loop) {
    return new Builder(loop);
  }

  /**
   * Returns queue-state metrics for one loop, with the defaults.
   *
   * @param loop the loop whose terms decide when this replica exports
   * @return the metrics, not yet bound (nor subscribed)
   * @throws NullPointerException if {@code loop} is null
   */
  public static QueueStateMetrics of(LeaderLoop loop) {
    return builder(loop).build();
  }

  /**
   * Returns the loop whose terms decide when this replica exports.
   *
   * @return the loop
   */
  public LeaderLoop loop() {
    return loop;
  }

  /**
   * Returns how many queues get their own series.
   *
   * @return the series budget
   */
  public int maxQueueSeries() {
    return maxQueueSeries;
  }

  /**
   * Returns whether the gauges are registered right now: true from the first {@code record} of a
   * term until the term ends.
   *
   * @return true while this replica exports queue state
   */
  public boolean isExporting() {
    lock.lock();
    try {
      return exported != null;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Remembers the registry and subscribes to the loop's events. Registers nothing: the gauges
   * appear on the first {@link #record} of a term. If the loop leads a term right now, that term
   * counts as started.
   *
   * @param registry the registry
   * @throws IllegalStateException if this instance is bound already or closed
   */
  @Override
  public void bindTo(MeterRegistry registry) {
    // Registers nothing; a term read after the subscription is either still running or its
    // onLost comes after this call.
    binding.bind(registry, r -> {}, () -> term = loop.currentTerm().orElse(null));
  }

  /**
   * Exports a snapshot, registering the gauges if this is the term's first.
   *
   * @param snapshot what the refresh collected
   * @return true if exported; false if the loop leads no term (not leader, or the term is over) or
   *     this object is closed, in which case nothing was registered or changed; false also if the
   *     registry refused a meter (logged at WARN), in which case this term's gauges are removed
   * @throws NullPointerException if {@code snapshot} is null
   * @throws IllegalArgumentException if a queue is named {@value Names#OVERFLOW_QUEUE}; the
   *     previous values stay exported
   * @throws IllegalStateException if {@link #bindTo} was not called
   */
  public boolean record(QueueStateSnapshot snapshot) {
    Objects.requireNonNull(snapshot, "snapshot");
    for (QueueState q : snapshot.queues()) {
      if (q.name().equals(Names.OVERFLOW_QUEUE)) {
        throw new IllegalArgumentException(
            "queue name "
                + Texts.quote(Names.OVERFLOW_QUEUE)
                + " is reserved for the overflow series, but the snapshot has a queue of that name");
      }
    }
    // Folded before taking the lock, so that a term ending on the watchdog thread waits for
    // registry updates only, never for the fold.
    QueueFolding.Result folded = QueueFolding.fold(snapshot.queues(), maxQueueSeries);
    lock.lock();
    try {
      if (binding.isClosed()) {
        return false;
      }
      MeterRegistry registry = binding.registry();
      if (registry == null) {
        throw new IllegalStateException("call bindTo(registry) before record(snapshot)");
      }
      if (term == null) {
        noTerm();
        return false;
      }
      boolean first = exported == null;
      if (first) {
        exported = new Exported(registry);
      }
      try {
        exported.update(folded, snapshot.collectionDuration(), clock.millis() / 1000.0);
      } catch (RuntimeException e) {
        // A registry that refuses meters must not end the leader's term: log, export nothing.
        log.warn("{} cannot export queue state; removing its gauges", context, e);
        unexport("the registry failed");
        return false;
      }
      if (first) {
        log.info(
            "{} queue-state gauges registered ({} queues, {} folded)",
            context,
            snapshot.queues().size(),
            folded.folded());
      }
      return true;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Reports a failed collection: the success gauge shows 0 until the next good {@link #record}.
   * Does nothing when the gauges are not registered (no good record yet in this term, or no term).
   *
   * @param error what went wrong; for the log only, may be null
   */
  public void recordFailure(Throwable error) {
    lock.lock();
    try {
      if (exported != null) {
        exported.status.success = 0;
        log.debug("{} queue-state collection failed: {}", context, String.valueOf(error));
      }
    } finally {
      lock.unlock();
    }
  }

  /**
   * Unsubscribes from the loop and removes exactly the gauges this instance registered, if any.
   * Idempotent; later calls to {@link #record} return false.
   */
  @Override
  public void close() {
    binding.close(
        () -> {
          unexport("closed");
          term = null;
        });
  }

  /** Test seam: the listener {@link #bindTo} subscribes, to feed it made-up events. */
  LeaderListener listenerForTests() {
    return binding.listener();
  }

  /** The loop's events: a term starts and ends the export; the binding logs what they throw. */
  private final class Events implements LeaderListener {

    @Override
    public void onAcquired(Term acquired) {
      lock.lock();
      try {
        if (binding.isClosed() || acquired.equals(term)) {
          return; // closed, or already caught up with this term in bindTo
        }
        unexport("a new term started");
        term = acquired;
        warnedNoTerm = false;
      } finally {
        lock.unlock();
      }
    }

    @Override
    public void onRefreshFailed(Term failed, Duration duration, Throwable error) {
      recordFailure(error);
    }

    @Override
    public void onLost(Term lost, LossReason reason, Throwable cause) {
      lock.lock();
      try {
        unexport("term " + (lost == null ? "?" : lost.number()) + " ended (" + reason + ")");
        term = null;
      } finally {
        lock.unlock();
      }
    }
  }

  /** Removes the gauges; caller holds the lock. */
  private void unexport(String why) {
    Exported e = exported;
    if (e == null) {
      return;
    }
    exported = null;
    e.remove();
    log.info("{} queue-state gauges removed: {}", context, why);
  }

  /** Caller holds the lock. */
  private void noTerm() {
    if (!warnedNoTerm) {
      warnedNoTerm = true;
      log.warn(
          "{} record() called while the loop leads no term: nothing is exported. Expected briefly"
              + " after a term ends; otherwise call record() from the loop's task only.",
          context);
    } else {
      log.debug("{} record() ignored: no active term", context);
    }
  }

  /** Values of the collection gauges; read by scrapes. */
  private static final class Status {
    volatile double success;
    volatile double durationSeconds;
    volatile double lastSuccessEpochSeconds;
    volatile double folded;
  }

  /** The gauges of one term. Guarded by the enclosing lock, except the scraped values. */
  private final class Exported {
    final MeterRegistry registry;
    final Status status = new Status();
    final List<Meter> statusGauges = new ArrayList<>();
    final List<MultiGauge> queueGauges = new ArrayList<>();
    final List<ToDoubleFunction<QueueCell>> readers = new ArrayList<>();

    /** Strong references to the cells of the queues exported now, by queue name. */
    final Map<String, QueueCell> cells = new HashMap<>();

    Exported(MeterRegistry registry) {
      this.registry = registry;
      // MultiGauge.register(registry) registers nothing until rows are given.
      queueGauge(Names.QUEUE_MESSAGES_READY, QueueCell::ready, "Messages ready for delivery", null);
      queueGauge(
          Names.QUEUE_MESSAGES_IN_FLIGHT,
          QueueCell::inFlight,
          "Messages delivered and not yet settled (leased)",
          null);
      queueGauge(
          Names.QUEUE_MESSAGES_SCHEDULED,
          QueueCell::scheduled,
          "Messages scheduled for later delivery (delayed)",
          null);
      queueGauge(Names.QUEUE_MESSAGES_DEAD, QueueCell::dead, "Dead-lettered messages", null);
      queueGauge(
          Names.QUEUE_OLDEST_READY_AGE,
          QueueCell::oldestReadyAgeSeconds,
          "Age of the oldest ready message",
          Names.UNIT_SECONDS);
    }

    /** Registers the collection gauges, once their values are set. */
    private void registerStatusGauges() {
      statusGauge(
          Names.QUEUE_STATE_COLLECTION_SUCCESS,
          s -> s.success,
          "1 after a successful queue-state collection, 0 after a failed one",
          null);
      statusGauge(
          Names.QUEUE_STATE_COLLECTION_DURATION,
          s -> s.durationSeconds,
          "How long the last successful queue-state collection took",
          Names.UNIT_SECONDS);
      statusGauge(
          Names.QUEUE_STATE_COLLECTION_LAST_SUCCESS,
          s -> s.lastSuccessEpochSeconds,
          "When the last successful queue-state collection was recorded, in seconds since the"
              + " epoch",
          Names.UNIT_SECONDS);
      statusGauge(
          Names.QUEUE_STATE_FOLDED,
          s -> s.folded,
          "Queues past the series budget, summed into queue=\"" + Names.OVERFLOW_QUEUE + "\"",
          Names.UNIT_QUEUES);
    }

    void update(QueueFolding.Result folded, Duration duration, double nowEpochSeconds) {
      Map<String, QueueCell> next = new HashMap<>(folded.kept().size() * 2 + 2);
      for (QueueState q : folded.kept()) {
        QueueCell cell = cells.get(q.name());
        if (cell == null) {
          cell = new QueueCell();
        }
        cell.set(q.ready(), q.inFlight(), q.scheduled(), q.dead(), q.oldestReadyAgeSeconds());
        next.put(q.name(), cell);
      }
      if (folded.folded() > 0) {
        QueueCell cell = cells.get(Names.OVERFLOW_QUEUE);
        if (cell == null) {
          cell = new QueueCell();
        }
        cell.set(
            folded.ready(),
            folded.inFlight(),
            folded.scheduled(),
            folded.dead(),
            folded.oldestReadyAgeSeconds());
        next.put(Names.OVERFLOW_QUEUE, cell);
      }
      // The same series as last time: the gauges already read these cells, nothing to register.
      boolean sameSeries = next.keySet().equals(cells.keySet()) && !cells.isEmpty();
      for (int i = 0; i < queueGauges.size() && !sameSeries; i++) {
        ToDoubleFunction<QueueCell> reader = readers.get(i);
        List<MultiGauge.Row<?>> rows = new ArrayList<>(next.size());
        for (Map.Entry<String, QueueCell> e : next.entrySet()) {
          rows.add(MultiGauge.Row.of(Tags.of(Names.TAG_QUEUE, e.getKey()), e.getValue(), reader));
        }
        // Rows missing from this list are removed; rows already there keep their gauge, which
        // reads the same cell (updated above).
        queueGauges.get(i).register(rows, false);
      }
      cells.keySet().retainAll(next.keySet());
      cells.putAll(next);
      status.durationSeconds = duration.toNanos() / 1e9;
      status.lastSuccessEpochSeconds = nowEpochSeconds;
      status.folded = folded.folded();
      status.success = 1;
      if (statusGauges.isEmpty()) {
        registerStatusGauges();
      }
    }

    void remove() {
      for (MultiGauge g : queueGauges) {
        g.register(List.of(), true);
      }
      for (Meter m : statusGauges) {
        registry.remove(m);
      }
      cells.clear();
    }

    private void statusGauge(
        String name, ToDoubleFunction<Status> f, String description, String unit) {
      statusGauges.add(
          Gauge.builder(name, status, f)
              .description(description)
              .baseUnit(unit)
              .tags(tags)
              .strongReference(true)
              .register(registry));
    }

    private void queueGauge(
        String name, ToDoubleFunction<QueueCell> reader, String description, String unit) {
      queueGauges.add(
          MultiGauge.builder(name)
              .description(description)
              .baseUnit(unit)
              .tags(tags)
              .register(registry));
      readers.add(reader);
    }
  }

  /** Options of a {@link QueueStateMetrics}. Not thread-safe. */
  public static final class Builder {

    private final LeaderLoop loop;
    private int maxQueueSeries = DEFAULT_MAX_QUEUE_SERIES;
    private Tags tags = Tags.empty();
    private Clock clock = Clock.systemUTC();

    private Builder(LeaderLoop loop) {
      this.loop = Objects.requireNonNull(loop, "loop");
    }

    /**
     * Sets how many queues get their own series; the rest are summed into {@code queue="_other"}.
     * Defaults to {@value QueueStateMetrics#DEFAULT_MAX_QUEUE_SERIES}. With 0, every queue is
     * folded.
     *
     * @param maxQueueSeries not negative
     * @return this builder
     * @throws IllegalArgumentException if negative
     */
    public Builder maxQueueSeries(int maxQueueSeries) {
      if (maxQueueSeries < 0) {
        throw new IllegalArgumentException(
            "maxQueueSeries must not be negative, but was " + maxQueueSeries);
      }
      this.maxQueueSeries = maxQueueSeries;
      return this;
    }

    /**
     * Adds tags to every queue-state meter, e.g. the service name. They may not use the key {@code
     * queue}. Defaults to none.
     *
     * @param tags extra tags
     * @return this builder
     */
    public Builder tags(Iterable<Tag> tags) {
      Objects.requireNonNull(tags, "tags");
      for (Tag t : tags) {
        if (t.getKey().equals(Names.TAG_QUEUE)) {
          throw new IllegalArgumentException(
              "tags must not use the key queue, which QueueStateMetrics sets itself");
        }
      }
      this.tags = this.tags.and(tags);
      return this;
    }

    /**
     * Sets the clock of the last-success timestamp. Defaults to {@link Clock#systemUTC()}.
     *
     * @param clock the clock
     * @return this builder
     */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /**
     * Builds the metrics; bind them with {@link QueueStateMetrics#bindTo}.
     *
     * @return the metrics
     */
    public QueueStateMetrics build() {
      return new QueueStateMetrics(this);
    }
  }
}
