package dev.retsu.lock.spring.boot;

import dev.retsu.lock.LeaderContext;
import dev.retsu.lock.LeaderInfo;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LeaderTask;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import dev.retsu.lock.spring.boot.RetsuLockProperties.TestMode;
import java.lang.reflect.Method;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
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
 * One named leader ({@code retsu.lock.leaders.<name>}) as a Spring {@link SmartLifecycle},
 * registered as bean {@code retsuLeader.<name>}: the lifecycle facade over how it takes part (a
 * {@link LeaderLoop} on the database, or a test mode) and its {@code @LeaderOnly} gate. It starts
 * when the context has been refreshed (never from a {@code @Bean} method), and {@link
 * #stop(Runnable)} stops it gracefully on its own thread, within {@code
 * spring.lifecycle.timeout-per-shutdown-phase}: the task and the {@code @LeaderOnly} work stop
 * first, then the lock is released. A leader runs once per application context; a start after a
 * stop does nothing. When its loop fails for good it publishes {@link LivenessState#BROKEN}, so the
 * platform restarts the process instead of keeping one that never contends again. Thread-safe.
 */
public final class RetsuLeader implements SmartLifecycle {

  private static final Logger LOG = LoggerFactory.getLogger(RetsuLeader.class);

  private enum Phase {
    NEW,
    RUNNING,
    STOPPING,
    STOPPED
  }

  private final String name;
  private final LockKey key;
  private final String candidateId;
  private final Candidacy candidacy;
  private final TestMode testMode;
  private final String role;
  private final boolean autoStartup;
  private final int phase;
  private final Supplier<LeaderTask> taskSource;
  private final String taskBean;
  private final ApplicationEventPublisher events;
  private final LeaderGate gate;
  private final JobObserver jobs;
  private final Map<Method, JobObserver.Job> methodJobs = new ConcurrentHashMap<>();
  private final LeaderDataSource dataSource;
  private final ReentrantLock lifecycle = new ReentrantLock();
  private volatile Phase state = Phase.NEW;
  private volatile Instant lastRefresh;
  private volatile JdbcTemplate jdbcTemplate;
  private final LeaderChangeEvents changes;
  private final dev.retsu.lock.TakeoverMode takeover;
  private final Duration retryInterval;

  RetsuLeader(
      String name,
      RetsuLockProperties.Leader settings,
      LockKey key,
      String candidateId,
      Candidacy candidacy,
      int phase,
      Supplier<LeaderTask> taskSource,
      String taskBean,
      ApplicationEventPublisher events,
      DataSource applicationDataSource,
      JobObserver jobs,
      LeaderChangeEvents changes) {
    this.name = name;
    this.changes = testMode(settings) ? null : changes;
    this.key = key;
    this.candidateId = candidateId;
    this.candidacy = candidacy;
    this.testMode = settings.getTestMode();
    this.takeover = settings.getTakeover();
    this.retryInterval = settings.getRetryInterval();
    this.role = settings.getRole() == null ? name : settings.getRole();
    this.autoStartup = settings.isAutoStartup();
    this.phase = phase;
    this.taskSource = taskSource;
    this.taskBean = taskBean;
    this.events = events;
    this.jobs = jobs;
    this.gate = new LeaderGate(this, "leader=" + name, settings.getCloseTimeout());
    this.dataSource =
        new LeaderDataSource(
            this,
            "leader '" + name + "'",
            "@LeaderOnly(\"" + name + "\")",
            testMode == TestMode.OFF ? null : applicationDataSource);
  }

  private static boolean testMode(RetsuLockProperties.Leader settings) {
    return settings.getTestMode() != TestMode.OFF;
  }

  /**
   * Returns the leader's name under {@code retsu.lock.leaders}.
   *
   * @return the name
   */
  public String name() {
    return name;
  }

  /**
   * Returns the lock key.
   *
   * @return the key
   */
  public LockKey key() {
    return key;
  }

  /**
   * Returns this instance's candidate id for this leader.
   *
   * @return the id
   */
  public String candidateId() {
    return candidateId;
  }

  /**
   * Returns the role named in Spring Integration's leader events ({@code role}, default the name).
   *
   * @return the role
   */
  public String role() {
    return role;
  }

  /**
   * Returns the loop, unless the leader runs in a test mode.
   *
   * @return the loop, or empty in test mode
   */
  public Optional<LeaderLoop> loop() {
    return candidacy.loop();
  }

  /**
   * Returns the test mode ({@code OFF} unless configured).
   *
   * @return the test mode
   */
  public TestMode testMode() {
    return testMode;
  }

  /**
   * Returns whether this instance leads right now: a local hint without I/O. Work that must not run
   * twice checks inside the term ({@code LeaderContext.ensureLeader()}), which the task and
   * {@code @LeaderOnly} methods do before they start.
   *
   * @return true while leading
   */
  public boolean isLeader() {
    return candidacy.isLeader();
  }

  /**
   * Returns the current term, while leading.
   *
   * @return the term, or empty
   */
  public Optional<Term> currentTerm() {
    return candidacy.currentTerm();
  }

  /**
   * Returns who holds the lock, with one query on a borrowed connection (none in test mode: this
   * instance when it leads, else nobody).
   *
   * @return the holder, or empty when nobody holds it
   */
  public Optional<LeaderInfo> currentHolder() {
    return candidacy.currentHolder();
  }

  /**
   * Returns the lease's session as a {@link DataSource}, for the term bound to the calling thread:
   * inside this leader's task or a {@code @LeaderOnly} method of it. Anywhere else {@code
   * getConnection()} fails (SQLState 08003), so code never reaches for a pooled session by
   * accident. In {@code test-mode: always-leader} it lends the application's DataSource.
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
   * Returns when the last refresh of the current term succeeded.
   *
   * @return the time, or empty before the first one or when not leading
   */
  public Optional<Instant> lastRefresh() {
    return isLeader() ? Optional.ofNullable(lastRefresh) : Optional.empty();
  }

  /**
   * Returns who leads the key, shaped like a lease, without I/O: this instance's own term while it
   * leads ({@link LeaderLoop#leaderInfo()}: everything present), else the holder as the context's
   * watch last delivered it ({@code retsu.lock.watch.enabled=true}; candidate, pid, database,
   * token, when the watch saw the term start), else empty.
   *
   * @return the leader, or empty when nobody leads, it is not known, or in a test mode
   */
  public Optional<LeaderInfo> leaderInfo() {
    Optional<LeaderInfo> own = candidacy.loop().flatMap(LeaderLoop::leaderInfo);
    if (own.isPresent() || changes == null) {
      return own;
    }
    return changes.leader(key);
  }

  /**
   * Hands leadership over ({@link LeaderLoop#yield(Duration)}): when this instance leads, its work
   * stops, the lock is released in the graceful order, and it does not contend again for {@code
   * cooldown}; it stays a candidate. The release waits for the {@code @LeaderOnly} work to end, up
   * to {@code close-timeout} (then an ERROR, and the lock goes), since a successor may start at
   * once; this call returns after {@code close-timeout} at most. Called from the leader's own work,
   * it does not wait for itself: that thread acts no more once it yields.
   *
   * @param cooldown how long not to contend: zero or positive
   * @return true if this call ended a term; false when this instance does not lead
   * @throws IllegalStateException in a test mode, which has no lock to hand over
   */
  public boolean yield(Duration cooldown) {
    java.util.Objects.requireNonNull(cooldown, "cooldown");
    LeaderLoop loop =
        candidacy
            .loop()
            .orElseThrow(
                () ->
                    new IllegalStateException(
                        "leader '"
                            + name
                            + "' runs in test-mode "
                            + testMode
                            + ", which has no lock to hand over"));
    return gate.handingOver(() -> loop.yield(cooldown));
  }

  /**
   * Returns what stopped the loop, once it has failed for good.
   *
   * @return the failure, or empty
   */
  public Optional<Throwable> failure() {
    return candidacy.failure();
  }

  /**
   * Returns the role for people and the health indicator: {@code leader}, {@code standby}, {@code
   * not-started}, {@code stopping}, {@code stopped} or {@code failed}.
   *
   * @return the role
   */
  public String status() {
    if (failure().isPresent()) {
      return "failed";
    }
    switch (state) {
      case NEW:
        return "not-started";
      case STOPPING:
        return "stopping";
      case STOPPED:
        return "stopped";
      default:
        return isLeader() ? "leader" : "standby";
    }
  }

  // ---- SmartLifecycle ----

  @Override
  public void start() {
    lifecycle.lock();
    try {
      if (state != Phase.NEW) {
        if (state == Phase.STOPPED) {
          LOG.warn(
              "[leader={}] A retsu-lock leader runs once per application context; not started"
                  + " again",
              name);
        }
        return;
      }
      if (changes != null) {
        changes.watch(this, name, null, candidateId, key);
      }
      candidacy.start(taskSource.get(), new Terms());
      state = Phase.RUNNING;
      LOG.info(
          "[leader={}] Started ({})",
          name,
          loop().map(Object::toString).orElse("test-mode " + testMode));
    } finally {
      lifecycle.unlock();
    }
  }

  @Override
  public void stop() {
    if (!beginStop()) {
      return;
    }
    try {
      candidacy.close();
    } finally {
      state = Phase.STOPPED;
    }
  }

  @Override
  public void stop(Runnable callback) {
    if (!beginStop()) {
      callback.run();
      return;
    }
    Thread t =
        new Thread(
            () -> {
              try {
                candidacy.close();
              } finally {
                state = Phase.STOPPED;
                callback.run();
              }
            },
            "retsu-lock-stop-" + name);
    t.start();
  }

  private boolean beginStop() {
    lifecycle.lock();
    try {
      if (state != Phase.RUNNING) {
        if (state == Phase.NEW) {
          state = Phase.STOPPED;
          candidacy.close(); // never started: nothing to hand over, but closed for good
        }
        return false;
      }
      state = Phase.STOPPING;
      return true;
    } finally {
      lifecycle.unlock();
    }
  }

  @Override
  public boolean isRunning() {
    Phase p = state;
    return p == Phase.RUNNING || p == Phase.STOPPING;
  }

  @Override
  public boolean isAutoStartup() {
    return autoStartup;
  }

  @Override
  public int getPhase() {
    return phase;
  }

  /** On context close after a failed refresh, or when the lifecycle never stopped it. */
  void destroy() {
    if (state != Phase.STOPPED) {
      stop();
    }
  }

  /**
   * Runs a {@code @LeaderOnly} method if this instance leads, with the term bound to the thread;
   * returns null without running it otherwise. Each run is counted as the job {@code
   * <class>.<method>}.
   */
  Object invokeAsLeader(MethodInvocation invocation) throws Throwable {
    Method m = invocation.getMethod();
    JobObserver.Job job = methodJobs.computeIfAbsent(m, x -> jobs.job(jobName(x)));
    return gate.invoke(invocation, job);
  }

  /** How this instance contends as a standby ({@code takeover}). */
  dev.retsu.lock.TakeoverMode takeover() {
    return takeover;
  }

  /** The wait between two attempts of a POLL standby ({@code retry-interval}). */
  Duration retryInterval() {
    return retryInterval;
  }

  /** The job name of a {@code @LeaderOnly} method: its class's simple name and the method's. */
  static String jobName(Method m) {
    return m.getDeclaringClass().getSimpleName() + "." + m.getName();
  }

  /** Registers a job before its first run, so that standbys export it at zero. */
  void declareJob(Method m) {
    methodJobs.computeIfAbsent(m, x -> jobs.job(jobName(x)));
  }

  /** Details for the health indicator, the info contributor and the endpoint; no I/O. */
  Map<String, Object> details() {
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("role", status());
    d.put("candidate", candidateId);
    d.put("key", key.toString());
    candidacy.describe(d);
    Optional<Term> own = currentTerm();
    own.ifPresent(
        term -> {
          d.put("term", term.number());
          d.put("fencingToken", term.fencingToken().toString());
          d.put("leaderSince", term.start().toString());
        });
    Optional<LeaderInfo> info = leaderInfo();
    if (info.isPresent()) {
      d.put("holder", holder(info.get(), candidateId, own.isPresent() ? "own-term" : "watch"));
    } else if (own.isPresent()) {
      Map<String, Object> holder = new LinkedHashMap<>(); // a test mode: no session, no lease
      holder.put("candidate", candidateId);
      holder.put("pid", own.get().backendPid());
      d.put("holder", holder);
    } else if (changes != null) {
      d.put("holder", null); // the watch saw nobody (or has not read the key yet)
    }
    lastRefresh()
        .ifPresent(at -> d.put("lastRefreshAge", Duration.between(at, Instant.now()).toString()));
    failure().ifPresent(e -> d.put("error", e.getClass().getName() + ": " + e.getMessage()));
    return d;
  }

  /**
   * A leader's lease-shaped details: candidate, pid, database, term, token, acquiredAt,
   * lastRenewal, validUntil (absent ones omitted), {@code foreign}, {@code self} and where they
   * come from. A {@linkplain LeaderInfo#foreign() foreign} holder (a session outside the
   * candidates' role) shows {@code foreign} true, an empty candidate, no token, and is never {@code
   * self}, whatever its session's name claims.
   */
  static Map<String, Object> holder(LeaderInfo info, String candidateId, String source) {
    Map<String, Object> h = new LinkedHashMap<>();
    h.put("candidate", info.candidateId());
    h.put("pid", info.pid());
    h.put("database", info.database());
    info.term().ifPresent(t -> h.put("term", t));
    info.token().ifPresent(t -> h.put("token", t.toString()));
    info.acquiredAt().ifPresent(t -> h.put("acquiredAt", t.toString()));
    info.lastRenewal().ifPresent(t -> h.put("lastRenewal", t.toString()));
    info.validUntil().ifPresent(t -> h.put("validUntil", t.toString()));
    h.put("foreign", info.foreign());
    h.put("self", !info.foreign() && info.candidateId().equals(candidateId));
    h.put("source", source);
    return h;
  }

  @Override
  public String toString() {
    return "RetsuLeader{" + name + ", " + status() + "}";
  }

  /** What the candidacy reports: the gate, the events, liveness. */
  private final class Terms implements Candidacy.Terms {

    /** The task bean's runs, counted as the job named like the bean; none without a bean. */
    private final JobObserver.Job task =
        taskBean == null ? JobObserver.Job.NO_OP : jobs.job(taskBean);

    @Override
    public void started(Term term) {
      lastRefresh = null;
      gate.begin(term);
      events.publishEvent(new LeadershipGrantedEvent(RetsuLeader.this, term));
    }

    @Override
    public void refreshed(Term term) {
      lastRefresh = Instant.now();
    }

    @Override
    public void ended(Term term, LossReason reason) {
      gate.end(term, reason); // @LeaderOnly work stops before the lock is released
      events.publishEvent(new LeadershipRevokedEvent(RetsuLeader.this, term, reason));
    }

    @Override
    public void failed(Throwable cause) {
      LOG.error(
          "[leader={}] Will never lead again in this process ({}); publishing liveness BROKEN so"
              + " the platform restarts it",
          name,
          cause.toString());
      AvailabilityChangeEvent.publish(events, RetsuLeader.this, LivenessState.BROKEN);
    }

    @Override
    public void refresh(LeaderTask work, LeaderContext ctx) throws Exception {
      gate.runBound(work, ctx, task);
    }
  }
}
