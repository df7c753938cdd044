package dev.retsu.lock.spring.boot;

import dev.retsu.lock.FencingToken;
import dev.retsu.lock.LeaderContext;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LeaderTask;
import dev.retsu.lock.LeadershipLostException;
import dev.retsu.lock.LockHolder;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import dev.retsu.lock.spring.boot.RetsuLockProperties.TestMode;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.aopalliance.intercept.MethodInvocation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.SmartLifecycle;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * One named leader ({@code retsu.lock.leaders.<name>}): a {@link LeaderLoop} run as a Spring {@link
 * SmartLifecycle}, registered as bean {@code retsuLeader.<name>}. It starts when the context has
 * been refreshed (never from a {@code @Bean} method), and {@link #stop(Runnable)} stops it
 * gracefully on its own thread, within {@code spring.lifecycle.timeout-per-shutdown-phase}: the
 * task and the {@code @LeaderOnly} work stop first, then the lock is released. A leader runs once
 * per application context; a start after a stop does nothing. Thread-safe.
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
  private final LeaderLoop loop;
  private final TestMode testMode;
  private final String role;
  private final Duration refreshInterval;
  private final Duration closeTimeout;
  private final boolean autoStartup;
  private final int phase;
  private final Supplier<LeaderTask> taskSource;
  private final ApplicationEventPublisher events;
  private final LeaderDataSource dataSource;
  private final ReentrantLock lifecycle = new ReentrantLock();
  private volatile Phase state = Phase.NEW;
  private volatile TermWork work;
  private volatile Instant lastRefresh;
  private volatile CompletableFuture<Void> done;
  private volatile Thread testModeThread;
  private volatile Object jdbcTemplate; // a JdbcTemplate, typed loosely: spring-jdbc is optional

  RetsuLeader(
      String name,
      RetsuLockProperties.Leader settings,
      LockKey key,
      String candidateId,
      LeaderLoop loop,
      int phase,
      Supplier<LeaderTask> taskSource,
      ApplicationEventPublisher events,
      DataSource applicationDataSource) {
    this.name = name;
    this.key = key;
    this.candidateId = candidateId;
    this.loop = loop;
    this.testMode = settings.getTestMode();
    this.role = settings.getRole() == null ? name : settings.getRole();
    this.refreshInterval = settings.getRefreshInterval();
    this.closeTimeout = settings.getCloseTimeout();
    this.autoStartup = settings.isAutoStartup();
    this.phase = phase;
    this.taskSource = taskSource;
    this.events = events;
    this.dataSource =
        new LeaderDataSource(this, testMode == TestMode.OFF ? null : applicationDataSource);
    if (loop != null) {
      loop.addListener(new Hooks());
    }
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
    return Optional.ofNullable(loop);
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
    if (loop != null) {
      return loop.isLeader();
    }
    TermWork w = work;
    return w != null && w.context() != null && w.context().isLeader();
  }

  /**
   * Returns the current term, while leading.
   *
   * @return the term, or empty
   */
  public Optional<Term> currentTerm() {
    if (loop != null) {
      return loop.currentTerm();
    }
    TermWork w = work;
    return w == null || w.context() == null ? Optional.empty() : Optional.of(w.term());
  }

  /**
   * Returns who holds the lock, with one query on a borrowed connection (none in test mode: this
   * instance when it leads, else nobody).
   *
   * @return the holder, or empty when nobody holds it
   */
  public Optional<LockHolder> currentHolder() {
    if (loop != null) {
      return loop.currentHolder();
    }
    if (!isLeader()) {
      return Optional.empty();
    }
    return Optional.of(
        new LockHolder(
            0, "retsu-lock:" + candidateId, null, Optional.empty(), Optional.empty(), "test-mode"));
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
    JdbcTemplate t = (JdbcTemplate) jdbcTemplate;
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
   * Returns what stopped the loop, once it has failed.
   *
   * @return the failure, or empty
   */
  public Optional<Throwable> failure() {
    return loop == null ? Optional.empty() : loop.failure();
  }

  /**
   * Returns the role for people and the health indicator: {@code leader}, {@code standby}, {@code
   * not-started}, {@code stopping}, {@code stopped} or {@code failed}.
   *
   * @return the role
   */
  public String status() {
    Phase p = state;
    if (loop != null && loop.state() == LeaderLoop.State.FAILED) {
      return "failed";
    }
    switch (p) {
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
      LeaderTask task = taskSource.get();
      if (loop != null) {
        LeaderTask bound = ctx -> runBound(task, ctx);
        String thread = "retsu-lock-leader-" + name;
        done =
            loop.start(
                bound,
                r -> {
                  Thread t = new Thread(r, thread);
                  t.setDaemon(true);
                  return t;
                });
      } else if (testMode == TestMode.ALWAYS_LEADER) {
        startTestModeLeader(task);
      }
      state = Phase.RUNNING;
      LOG.info("[leader={}] Started ({})", name, loop != null ? loop : "test-mode " + testMode);
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
      closeNow();
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
                closeNow();
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
          closeNow(); // never started: nothing to hand over, but the loop is closed for good
        }
        return false;
      }
      state = Phase.STOPPING;
      return true;
    } finally {
      lifecycle.unlock();
    }
  }

  /** Core's close order: the refresh stops, listeners hear onLost (work ends), lock released. */
  private void closeNow() {
    if (loop != null) {
      loop.close();
      return;
    }
    Thread t = testModeThread;
    if (t != null) {
      t.interrupt();
      try {
        t.join(closeTimeout.toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    TermWork w = work;
    if (w != null) {
      ((TestModeContext) w.context()).end();
      endWork(w, LossReason.CLOSED);
      work = null;
      events.publishEvent(new LeadershipRevokedEvent(this, w.term(), LossReason.CLOSED));
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

  /** The future of the running loop, for tests. */
  CompletableFuture<Void> done() {
    return done;
  }

  // ---- leader work ----

  private void runBound(LeaderTask task, LeaderContext ctx) throws Exception {
    TermWork w = work;
    if (w != null && w.term().equals(ctx.term())) {
      w.bind(ctx); // from now on @LeaderOnly methods may run in this term
    }
    TermBinding.Handle binding = TermBinding.bind(this, ctx);
    try {
      task.refresh(ctx);
    } finally {
      binding.close();
    }
  }

  /**
   * Runs a {@code @LeaderOnly} method if this instance leads, with the term bound to the thread;
   * returns null without running it otherwise.
   */
  Object invokeAsLeader(MethodInvocation invocation) throws Throwable {
    LeaderContext bound = TermBinding.get(this);
    if (bound != null) {
      bound.ensureLeader(); // nested inside the task or another @LeaderOnly method of this leader
      return invocation.proceed();
    }
    TermWork w = work;
    LeaderContext ctx = w == null ? null : w.context();
    if (ctx == null || !ctx.isLeader() || !w.enter()) {
      LOG.debug("[leader={}] Not leading; skipped {}", name, invocation.getMethod());
      return null;
    }
    try {
      try {
        ctx.ensureLeader();
      } catch (LeadershipLostException e) {
        LOG.debug(
            "[leader={}] Term ended; skipped {}: {}", name, invocation.getMethod(), e.getMessage());
        return null;
      }
      TermBinding.Handle binding = TermBinding.bind(this, ctx);
      try {
        return invocation.proceed();
      } finally {
        binding.close();
      }
    } finally {
      w.leave();
    }
  }

  private void endWork(TermWork w, LossReason reason) {
    Set<Thread> still = w.end(reason, closeTimeout);
    for (Thread t : still) {
      if (reason == LossReason.CLOSED || reason == LossReason.REFRESH_FAILED) {
        LOG.error(
            "[leader={}] @LeaderOnly work on thread {} ignored the interrupt for close-timeout {};"
                + " releasing the lock anyway: make it stop when interrupted",
            name,
            t.getName(),
            closeTimeout);
      }
    }
  }

  private void startTestModeLeader(LeaderTask task) {
    Term term =
        new Term(1, key, candidateId, Instant.now(), new FencingToken(0, 1), 0); // no database
    TestModeContext ctx = new TestModeContext(name, term);
    TermWork w = new TermWork(term);
    w.bind(ctx);
    work = w;
    events.publishEvent(new LeadershipGrantedEvent(this, term));
    Thread t =
        new Thread(
            () -> {
              while (ctx.isLeader() && !Thread.currentThread().isInterrupted()) {
                TermBinding.Handle binding = TermBinding.bind(this, ctx);
                try {
                  task.refresh(ctx);
                  lastRefresh = Instant.now();
                } catch (InterruptedException e) {
                  return;
                } catch (Exception e) {
                  LOG.warn("[leader={}] Test-mode refresh failed; still leading", name, e);
                } finally {
                  binding.close();
                }
                try {
                  TimeUnit.NANOSECONDS.sleep(refreshInterval.toNanos());
                } catch (InterruptedException e) {
                  return;
                }
              }
            },
            "retsu-lock-test-leader-" + name);
    t.setDaemon(true);
    testModeThread = t;
    t.start();
  }

  /** Details for the health indicator, the info contributor and the endpoint; no I/O. */
  Map<String, Object> details() {
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("role", status());
    d.put("candidate", candidateId);
    d.put("key", key.toString());
    if (loop != null) {
      d.put("state", loop.state().name());
    } else {
      d.put("testMode", testMode.name());
    }
    currentTerm()
        .ifPresent(
            term -> {
              d.put("term", term.number());
              d.put("fencingToken", term.fencingToken().toString());
              d.put("leaderSince", term.start().toString());
              Map<String, Object> holder = new LinkedHashMap<>();
              holder.put("candidate", candidateId);
              holder.put("pid", term.backendPid());
              d.put("holder", holder);
            });
    lastRefresh()
        .ifPresent(at -> d.put("lastRefreshAge", Duration.between(at, Instant.now()).toString()));
    failure().ifPresent(e -> d.put("error", e.getClass().getName() + ": " + e.getMessage()));
    return d;
  }

  @Override
  public String toString() {
    return "RetsuLeader{" + name + ", " + status() + "}";
  }

  /** What the loop tells this leader; on the loop's threads, one call at a time. */
  private final class Hooks implements LeaderListener {

    @Override
    public void onAcquired(Term term) {
      lastRefresh = null;
      work = new TermWork(term);
      events.publishEvent(new LeadershipGrantedEvent(RetsuLeader.this, term));
    }

    @Override
    public void onRefreshSucceeded(Term term, Duration duration) {
      lastRefresh = Instant.now();
    }

    @Override
    public void onLost(Term term, LossReason reason, Throwable cause) {
      TermWork w = work;
      if (w != null && w.term().equals(term)) {
        endWork(w, reason); // @LeaderOnly work stops before the lock is released
        work = null;
      }
      events.publishEvent(new LeadershipRevokedEvent(RetsuLeader.this, term, reason));
    }
  }
}
