package dev.retsu.lock.micrometer;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Runs of leader-only jobs, the one signal that says "this job ran on exactly one replica": per job
 * ({@code @LeaderOnly} method or leader task) a run counter by outcome, a duration timer and the
 * time of the last success. Only the leader runs a job, so the standbys' counters stay at 0, and
 * {@code sum by (job) (increase(retsu_lock_job_runs_total{outcome="success"}[5m]))} over all
 * replicas counts each run once. The Spring Boot starter binds one per leader and group and counts
 * every run itself; without Spring, wrap the work:
 *
 * <pre>{@code
 * LeaderJobMetrics jobs = LeaderJobMetrics.builder("billing", loop.candidateId()).build();
 * jobs.bindTo(registry);
 * LeaderJobMetrics.Job invoices = jobs.job("invoices"); // registered now, at 0
 * // in leader work:
 * long start = System.nanoTime();
 * sendInvoices();
 * invoices.succeeded(Duration.ofNanos(System.nanoTime() - start));
 * }</pre>
 *
 * <table>
 *   <caption>Meters (tags {@code lock}, {@code candidate}, {@code job})</caption>
 *   <tr><th>name</th><th>type</th><th>more tags</th></tr>
 *   <tr><td>{@value Names#JOB_RUNS}</td><td>counter</td><td>{@code outcome=success|failure}</td></tr>
 *   <tr><td>{@value Names#JOB_DURATION}</td><td>timer</td><td>{@code outcome}</td></tr>
 *   <tr><td>{@value Names#JOB_LAST_SUCCESS}</td><td>gauge, seconds since the epoch</td><td></td></tr>
 * </table>
 *
 * <p>Job names are code names (a method, a bean), never data: keep them few. Thread-safe. {@link
 * #close()} removes exactly the meters this instance registered.
 */
public final class LeaderJobMetrics implements MeterBinder, AutoCloseable {

  private final Tags tags;
  private final Clock clock;
  private final ReentrantLock lock = new ReentrantLock();
  private final Map<String, Job> jobs = new LinkedHashMap<>();
  private final List<Meter> meters = new ArrayList<>();
  private MeterRegistry registry;
  private boolean closed;

  private LeaderJobMetrics(Builder b) {
    this.tags = Tags.of(Names.TAG_LOCK, b.lock, Names.TAG_CANDIDATE, b.candidate).and(b.tags);
    this.clock = b.clock;
  }

  /**
   * Returns a builder.
   *
   * @param lock the value of the {@code lock} tag: the leader's or group's name
   * @param candidate the value of the {@code candidate} tag
   * @return a builder
   */
  public static Builder builder(String lock, String candidate) {
    return new Builder(lock, candidate);
  }

  /**
   * Returns the tags every meter carries.
   *
   * @return {@code lock}, {@code candidate} and the extra tags
   */
  public Tags tags() {
    return tags;
  }

  /**
   * Registers the meters of the jobs declared so far; later jobs register when declared.
   *
   * @param registry the registry
   * @throws IllegalStateException if bound already or closed
   */
  @Override
  public void bindTo(MeterRegistry registry) {
    Objects.requireNonNull(registry, "registry");
    lock.lock();
    try {
      if (closed) {
        throw new IllegalStateException("LeaderJobMetrics" + tags + " is closed");
      }
      if (this.registry != null) {
        throw new IllegalStateException("LeaderJobMetrics" + tags + " is bound already");
      }
      this.registry = registry;
      for (Job j : jobs.values()) {
        j.register(registry);
      }
    } finally {
      lock.unlock();
    }
  }

  /**
   * Returns a job, declaring it (and, when bound, registering its meters at 0) the first time.
   *
   * @param name the job's name: 1 to 200 characters
   * @return the job
   */
  public Job job(String name) {
    Objects.requireNonNull(name, "name");
    if (name.isBlank() || name.length() > 200) {
      throw new IllegalArgumentException(
          "job name must be 1 to 200 characters, not blank, but was \"" + name + "\"");
    }
    lock.lock();
    try {
      Job j = jobs.get(name);
      if (j == null) {
        j = new Job(name);
        jobs.put(name, j);
        if (registry != null && !closed) {
          j.register(registry);
        }
      }
      return j;
    } finally {
      lock.unlock();
    }
  }

  /** Removes exactly the meters this instance registered. Idempotent; never throws. */
  @Override
  public void close() {
    lock.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
      if (registry != null) {
        for (Meter m : meters) {
          registry.remove(m);
        }
      }
      meters.clear();
      for (Job j : jobs.values()) {
        j.unregister();
      }
    } finally {
      lock.unlock();
    }
  }

  @Override
  public String toString() {
    return "LeaderJobMetrics" + tags;
  }

  /** One job's meters. Thread-safe; counting before the bind or after the close does nothing. */
  public final class Job {
    private final String name;
    private volatile Counter successes;
    private volatile Counter failures;
    private volatile Timer successTime;
    private volatile Timer failureTime;
    private volatile double lastSuccessEpochSeconds;

    private Job(String name) {
      this.name = name;
    }

    /**
     * Returns the job's name, the value of the {@code job} tag.
     *
     * @return the name
     */
    public String name() {
      return name;
    }

    /**
     * Counts a run that ended normally.
     *
     * @param duration how long it ran
     */
    public void succeeded(Duration duration) {
      Counter c = successes;
      if (c != null) {
        c.increment();
        successTime.record(duration);
        lastSuccessEpochSeconds = clock.millis() / 1000.0;
      }
    }

    /**
     * Counts a run that threw.
     *
     * @param duration how long it ran
     * @param error what it threw; not recorded (tags stay low-cardinality)
     */
    public void failed(Duration duration, Throwable error) {
      Counter c = failures;
      if (c != null) {
        c.increment();
        failureTime.record(duration);
      }
    }

    /** Caller holds the lock. */
    private void register(MeterRegistry r) {
      Tags t = tags.and(Tag.of(Names.TAG_JOB, name));
      List<Meter> made = new ArrayList<>();
      try {
        Counter s = add(made, counter(r, t, Names.OUTCOME_SUCCESS));
        Counter f = add(made, counter(r, t, Names.OUTCOME_FAILURE));
        Timer st = add(made, timer(r, t, Names.OUTCOME_SUCCESS));
        Timer ft = add(made, timer(r, t, Names.OUTCOME_FAILURE));
        add(
            made,
            Gauge.builder(Names.JOB_LAST_SUCCESS, this, j -> j.lastSuccessEpochSeconds)
                .description(
                    "When this leader-only job last ran successfully here, seconds since the"
                        + " epoch; 0 before its first success here")
                .baseUnit(Names.UNIT_SECONDS)
                .tags(t)
                .strongReference(true)
                .register(r));
        successTime = st;
        failureTime = ft;
        failures = f;
        successes = s;
        meters.addAll(made);
      } catch (RuntimeException e) {
        for (Meter m : made) {
          r.remove(m);
        }
        throw e;
      }
    }

    private void unregister() {
      successes = null;
      failures = null;
    }

    private <M extends Meter> M add(List<Meter> made, M m) {
      made.add(m);
      return m;
    }

    private Counter counter(MeterRegistry r, Tags t, String outcome) {
      return Counter.builder(Names.JOB_RUNS)
          .description("Runs of this leader-only job here, by outcome; only the leader runs it")
          .baseUnit(Names.UNIT_RUNS)
          .tags(t)
          .tag(Names.TAG_OUTCOME, outcome)
          .register(r);
    }

    private Timer timer(MeterRegistry r, Tags t, String outcome) {
      return Timer.builder(Names.JOB_DURATION)
          .description("How long the runs of this leader-only job took, by outcome")
          .tags(t)
          .tag(Names.TAG_OUTCOME, outcome)
          .register(r);
    }
  }

  /** Options of {@link LeaderJobMetrics}. Not thread-safe. */
  public static final class Builder {
    private final String lock;
    private final String candidate;
    private Tags tags = Tags.empty();
    private Clock clock = Clock.systemUTC();

    private Builder(String lock, String candidate) {
      this.lock = Objects.requireNonNull(lock, "lock");
      this.candidate = Objects.requireNonNull(candidate, "candidate");
      if (lock.isBlank()) {
        throw new IllegalArgumentException("lock must not be blank, but was \"" + lock + "\"");
      }
    }

    /**
     * Adds tags to every meter. They may not use the keys this class sets.
     *
     * @param extra the tags
     * @return this builder
     */
    public Builder tags(Iterable<Tag> extra) {
      for (Tag t : Objects.requireNonNull(extra, "tags")) {
        if (List.of(Names.TAG_LOCK, Names.TAG_CANDIDATE, Names.TAG_JOB, Names.TAG_OUTCOME)
            .contains(t.getKey())) {
          throw new IllegalArgumentException(
              "tags must not use the key " + t.getKey() + ", which LeaderJobMetrics sets itself");
        }
      }
      this.tags = this.tags.and(extra);
      return this;
    }

    /**
     * Sets the clock of the last-success gauge. Defaults to {@link Clock#systemUTC()}.
     *
     * @param clock the clock
     * @return this builder
     */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /**
     * Builds the metrics, not yet bound.
     *
     * @return the metrics
     */
    public LeaderJobMetrics build() {
      return new LeaderJobMetrics(this);
    }
  }
}
