package dev.retsu.lock.spring.boot;

import dev.retsu.lock.LeaderGroup;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LeaderTask;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.aopalliance.intercept.MethodInvocation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.availability.AvailabilityChangeEvent;
import org.springframework.boot.availability.LivenessState;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.SmartLifecycle;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * One named group ({@code retsu.lock.groups.<name>}): a {@link LeaderGroup} run as a Spring {@link
 * SmartLifecycle}, bean {@code retsuLeaderGroup.<name>}. Its task (the {@code LeaderTask} bean
 * named like the group, or {@code task}) runs per held key on that key's session, with the term
 * bound to the thread so {@link #dataSource()} and {@link #jdbcTemplate()} reach the session that
 * holds the key; {@code @LeaderOnly(value = "<group>", key = "<key>")} runs a method only while
 * this instance holds that key. Stopping it ends every key's work before the keys are released.
 *
 * <p>A group that fails for good publishes {@link LivenessState#BROKEN}: at start when {@code
 * LeaderGroup.start} throws, and later (a transaction pooler found when a session is opened again)
 * from a watch thread, {@code retsu-lock-group-<name>-watch}, that reads the group's state every
 * {@link #WATCH_INTERVAL} without I/O and stops with the group. Thread-safe.
 */
public final class RetsuLeaderGroup implements SmartLifecycle {

  private static final Logger LOG = LoggerFactory.getLogger(RetsuLeaderGroup.class);

  /** How often a started group's state is read for a failure after start: 1 second. */
  static final java.time.Duration WATCH_INTERVAL = java.time.Duration.ofSeconds(1);

  private final String name;
  private final LeaderGroup group;
  private final Map<LockKey, String> keyNames;
  private final Map<LockKey, LeaderGate> gates = new LinkedHashMap<>();
  private final Map<Method, JobObserver.Job> methodJobs = new ConcurrentHashMap<>();
  private final boolean autoStartup;
  private final int phase;
  private final Supplier<LeaderTask> taskSource;
  private final String taskBean;
  private final ApplicationEventPublisher events;
  private final JobObserver jobs;
  private final LeaderDataSource dataSource;
  private final ReentrantLock lifecycle = new ReentrantLock();
  private volatile boolean started;
  private volatile boolean stopped;
  private volatile JdbcTemplate jdbcTemplate;
  private final AtomicBoolean brokenPublished = new AtomicBoolean();
  private ScheduledExecutorService watch; // guarded by lifecycle
  private final LeaderChangeEvents changes;

  RetsuLeaderGroup(
      String name,
      RetsuLockProperties.Group settings,
      LeaderGroup group,
      Map<LockKey, String> keyNames,
      int phase,
      Supplier<LeaderTask> taskSource,
      String taskBean,
      ApplicationEventPublisher events,
      JobObserver jobs,
      LeaderChangeEvents changes) {
    this.name = name;
    this.changes = changes;
    this.group = group;
    this.keyNames = Collections.unmodifiableMap(new LinkedHashMap<>(keyNames));
    this.autoStartup = settings.isAutoStartup();
    this.phase = phase;
    this.taskSource = taskSource;
    this.taskBean = taskBean;
    this.events = events;
    this.jobs = jobs;
    for (Map.Entry<LockKey, String> e : keyNames.entrySet()) {
      gates.put(
          e.getKey(),
          new LeaderGate(
              this, "group=" + name + ", key=" + e.getValue(), settings.getCloseTimeout()));
    }
    this.dataSource =
        new LeaderDataSource(
            this, "group '" + name + "'", "@LeaderOnly(value = \"" + name + "\", key = ...)", null);
    group.addListener(new Hooks());
  }

  /**
   * Returns the group's name under {@code retsu.lock.groups}.
   *
   * @return the name
   */
  public String name() {
    return name;
  }

  /**
   * Returns the group.
   *
   * @return the group
   */
  public LeaderGroup group() {
    return group;
  }

  /**
   * Returns the keys this instance holds right now, by the names configured ({@code keys}, or the
   * partition numbers): a local hint without I/O.
   *
   * @return the names of the held keys, in the configured order
   */
  public List<String> heldKeys() {
    List<String> out = new ArrayList<>();
    for (LockKey k : group.heldKeys()) {
      out.add(keyNames.get(k));
    }
    return out;
  }

  /**
   * Returns whether this instance holds one key now: a local hint without I/O.
   *
   * @param key the key's name ({@code keys}) or partition number
   * @return true while it holds the key
   * @throws IllegalArgumentException if the group has no such key
   */
  public boolean holds(String key) {
    return group.currentTerm(lockKey(key)).isPresent();
  }

  /**
   * Returns the session of the key whose term is bound to the calling thread (inside the group's
   * task or a {@code @LeaderOnly(value = "<group>", key = ...)} method) as a {@link DataSource};
   * anywhere else {@code getConnection()} fails with SQLState 08003.
   *
   * @return the view
   */
  public DataSource dataSource() {
    return dataSource;
  }

  /**
   * Returns a {@link JdbcTemplate} over {@link #dataSource()} (needs spring-jdbc).
   *
   * @return the template
   */
  public JdbcTemplate jdbcTemplate() {
    JdbcTemplate t = jdbcTemplate;
    if (t == null) {
      t = new JdbcTemplate(dataSource);
      jdbcTemplate = t;
    }
    return t;
  }

  /**
   * Returns the role for people and health: {@code member}, {@code not-started}, {@code stopped} or
   * {@code failed}.
   *
   * @return the role
   */
  public String status() {
    if (group.state() == LeaderGroup.State.FAILED) {
      return "failed";
    }
    if (stopped) {
      return "stopped";
    }
    return started ? "member" : "not-started";
  }

  LockKey lockKey(String key) {
    for (Map.Entry<LockKey, String> e : keyNames.entrySet()) {
      if (e.getValue().equals(key)) {
        return e.getKey();
      }
    }
    throw new IllegalArgumentException(
        "Group '" + name + "' has no key '" + key + "'; its keys are " + keyNames.values());
  }

  @Override
  public void start() {
    lifecycle.lock();
    try {
      if (started || stopped) {
        return;
      }
      started = true;
      LeaderTask task = taskSource.get();
      JobObserver.Job job = taskBean == null ? JobObserver.Job.NO_OP : jobs.job(taskBean);
      if (changes != null) {
        for (Map.Entry<LockKey, String> e : keyNames.entrySet()) {
          changes.watch(this, name, e.getValue(), group.candidateId(), e.getKey());
        }
      }
      try {
        group.start(ctx -> gates.get(ctx.term().key()).runBound(task, ctx, job));
      } catch (RuntimeException e) {
        publishBroken(e);
        return;
      }
      // core tells no listener when a running group fails (it only moves to FAILED): read it
      watch =
          Executors.newSingleThreadScheduledExecutor(
              r -> {
                Thread t = new Thread(r, "retsu-lock-group-" + name + "-watch");
                t.setDaemon(true);
                return t;
              });
      long every = WATCH_INTERVAL.toMillis();
      watch.scheduleWithFixedDelay(this::checkFailed, every, every, TimeUnit.MILLISECONDS);
    } finally {
      lifecycle.unlock();
    }
  }

  @Override
  public void stop() {
    lifecycle.lock();
    try {
      stopped = true;
      if (watch != null) {
        watch.shutdownNow();
      }
      group.close(); // every key's work stops, then the sessions end
    } finally {
      lifecycle.unlock();
    }
  }

  /** The watch's check: a group that failed after start will never lead a key again. */
  private void checkFailed() {
    if (group.state() == LeaderGroup.State.FAILED && !stopped) {
      publishBroken(group.failure().orElse(null));
      watch.shutdown();
    }
  }

  private void publishBroken(Throwable cause) {
    if (!brokenPublished.compareAndSet(false, true)) {
      return;
    }
    LOG.error(
        "[group={}] Will never lead a key in this process; publishing liveness BROKEN",
        name,
        cause);
    AvailabilityChangeEvent.publish(events, this, LivenessState.BROKEN);
  }

  @Override
  public boolean isRunning() {
    return started && !stopped;
  }

  @Override
  public boolean isAutoStartup() {
    return autoStartup;
  }

  @Override
  public int getPhase() {
    return phase;
  }

  /** Runs a {@code @LeaderOnly(value = group, key = k)} method while this instance holds k. */
  Object invokeAsLeader(String key, MethodInvocation invocation) throws Throwable {
    LeaderGate gate = gates.get(lockKey(key));
    JobObserver.Job job =
        methodJobs.computeIfAbsent(invocation.getMethod(), m -> jobs.job(RetsuLeader.jobName(m)));
    return gate.invoke(invocation, job);
  }

  /** Registers a job before its first run, so that members that do not hold its key export 0. */
  void declareJob(Method m) {
    methodJobs.computeIfAbsent(m, x -> jobs.job(RetsuLeader.jobName(x)));
  }

  /** Details for health, info and the endpoint; no I/O. */
  Map<String, Object> details() {
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("role", status());
    d.put("candidate", group.candidateId());
    d.put("state", group.state().name());
    d.put("keys", group.keys().size());
    d.put("keysHeld", group.heldCount());
    d.put("members", group.members());
    d.put("sessions", group.openSessions());
    if (group.heldCount() <= 100) {
      d.put("held", heldKeys());
    }
    if (changes != null && keyNames.size() <= 100) {
      d.put("holders", holders());
    }
    group.failure().ifPresent(e -> d.put("error", e.getClass().getName() + ": " + e.getMessage()));
    return d;
  }

  /**
   * Hands one key over ({@link LeaderGroup#yield(LockKey, Duration)}): its work stops, it is
   * released in the graceful order, and this member does not take it again for {@code cooldown}.
   * The release waits for the key's {@code @LeaderOnly} work to end, up to {@code close-timeout};
   * so does a rebalance's.
   *
   * @param keyName the key's name ({@code keys}) or partition number
   * @param cooldown how long not to take it again: zero or positive
   * @return true if this member held the key and released it
   * @throws IllegalArgumentException if the group has no such key
   */
  public boolean yield(String keyName, java.time.Duration cooldown) {
    LockKey key = lockKey(keyName);
    return gates.get(key).handingOver(() -> group.yield(key, cooldown));
  }

  /** Per key name, who leads it as this member's own term or the watch last delivered; no I/O. */
  private Map<String, Object> holders() {
    Map<String, Object> out = new LinkedHashMap<>();
    for (Map.Entry<LockKey, String> e : keyNames.entrySet()) {
      Optional<dev.retsu.lock.LeaderInfo> own = group.leaderInfo(e.getKey());
      Optional<dev.retsu.lock.LeaderInfo> info =
          own.isPresent() || changes == null ? own : changes.leader(e.getKey());
      out.put(
          e.getValue(),
          info.map(
                  i ->
                      RetsuLeader.holder(
                          i, group.candidateId(), own.isPresent() ? "own-term" : "watch"))
              .orElse(null));
    }
    return out;
  }

  /** Close what was never started (context failed), idempotently. */
  void destroy() {
    if (!stopped) {
      stop();
    }
  }

  @Override
  public String toString() {
    return "RetsuLeaderGroup{" + name + ", " + status() + "}";
  }

  /** The group's events: each key's gate opens on its term and closes before its release. */
  private final class Hooks implements LeaderListener {
    @Override
    public void onAcquired(Term term) {
      LeaderGate g = gates.get(term.key());
      if (g != null) {
        g.begin(term);
      }
    }

    @Override
    public void onLost(Term term, LossReason reason, Throwable cause) {
      LeaderGate g = gates.get(term.key());
      if (g != null) {
        g.end(term, reason);
      }
    }
  }
}
