package dev.retsu.lock;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Elects one leader among candidates that share a {@link LockKey}, and runs the leader's task.
 *
 * <p>The flow, by default the Retsu state collector's:
 *
 * <pre>
 * start -&gt; try lock --held elsewhere--&gt; wait retryInterval (15 s, jittered) -&gt; try lock
 *                   --acquired--&gt; refresh now --ok--&gt; wait refreshInterval (15 s) -&gt; refresh
 *                                              --fails--&gt; end term: notify, release the lock;
 *                                                         EXIT: run() throws to the caller
 *                                                         STEP_DOWN: back to standby
 * </pre>
 *
 * <ul>
 *   <li><b>Standby</b> borrows a connection for each attempt and gives it back holding nothing: it
 *       holds no connection between attempts.
 *   <li><b>Leader</b> keeps the one connection that holds the lock for the whole term; the task
 *       runs on it ({@link LeaderContext#connection()}). Between refreshes the loop waits on that
 *       session's socket, so a terminated session or a stopped server ends the term within
 *       milliseconds, and proves ownership with one round trip every {@code heartbeatInterval}.
 *   <li><b>Self-fencing.</b> The leader's session carries server-side bounds (TCP keepalives,
 *       {@code tcp_user_timeout}, {@code idle_session_timeout}, {@code
 *       client_connection_check_interval}) after which PostgreSQL ends a silent session and
 *       releases the lock. The loop keeps a client-side deadline, shorter than those bounds by a
 *       margin and measured on the monotonic clock from the start of the last successful round
 *       trip. When it passes, a watchdog thread ends the term ({@link LossReason#SELF_FENCED}): the
 *       context turns invalid, the task is interrupted, listeners are told and the session is
 *       aborted, all before the server could hand the lock to anyone else.
 *   <li><b>Fencing token.</b> Each term gets a {@link FencingToken} strictly greater than every
 *       earlier term's on the cluster, durable across a server crash.
 *   <li><b>Never stuck.</b> After any failure the loop either contends again or throws to the
 *       caller.
 * </ul>
 *
 * <p>{@link #run(LeaderTask)} blocks the calling thread; {@link #start(LeaderTask)} runs it on a
 * new thread. A loop runs once. {@link #close()} from any thread stops it within a bounded time.
 * Thread-safe.
 */
public final class LeaderLoop implements AutoCloseable {

  /** Default wait between standby attempts: 15 seconds. */
  public static final Duration DEFAULT_RETRY_INTERVAL = Duration.ofSeconds(15);

  /** Default wait between refreshes: 15 seconds. */
  public static final Duration DEFAULT_REFRESH_INTERVAL = Duration.ofSeconds(15);

  /** Default retry jitter: each standby wait is drawn from retryInterval ± 10%. */
  public static final double DEFAULT_RETRY_JITTER = 0.1;

  /** Default failure policy: {@link FailurePolicy#EXIT}, the Retsu behaviour. */
  public static final FailurePolicy DEFAULT_FAILURE_POLICY = FailurePolicy.EXIT;

  /** Default limit on one run of the leader task: 60 seconds. */
  public static final Duration DEFAULT_TASK_TIMEOUT = Duration.ofSeconds(60);

  /** Default interval between ownership checks while leading: 2 seconds. */
  public static final Duration DEFAULT_HEARTBEAT_INTERVAL = Duration.ofSeconds(2);

  /** Default self-fencing deadline: 8 seconds after the start of the last successful round trip. */
  public static final Duration DEFAULT_SELF_FENCE_AFTER = Duration.ofSeconds(8);

  /** Default {@code tcp_keepalives_idle} on the leader's session: 5 seconds. */
  public static final Duration DEFAULT_KEEPALIVE_IDLE = Duration.ofSeconds(5);

  /** Default {@code tcp_keepalives_interval} on the leader's session: 2 seconds. */
  public static final Duration DEFAULT_KEEPALIVE_INTERVAL = Duration.ofSeconds(2);

  /** Default {@code tcp_keepalives_count} on the leader's session: 3. */
  public static final int DEFAULT_KEEPALIVE_COUNT = 3;

  /** Default {@code idle_session_timeout} on the leader's session: 20 seconds. */
  public static final Duration DEFAULT_IDLE_SESSION_TIMEOUT = Duration.ofSeconds(20);

  /** The least gap between the self-fencing deadline and the server-side bound: 1 second. */
  public static final Duration MIN_FENCING_MARGIN = Duration.ofSeconds(1);

  /** Default longest wait between failed terms under {@link FailurePolicy#STEP_DOWN}: 5 minutes. */
  public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofMinutes(5);

  /** Default takeover mode: {@link TakeoverMode#POLL}. */
  public static final TakeoverMode DEFAULT_TAKEOVER = TakeoverMode.POLL;

  /** Default longest single wait in {@link TakeoverMode#WAIT} before it is re-armed: 5 seconds. */
  public static final Duration DEFAULT_WAIT_TIMEOUT = Duration.ofSeconds(5);

  /** Default time {@link #close()} waits for {@link #run} to return: 10 seconds. */
  public static final Duration DEFAULT_CLOSE_TIMEOUT = Duration.ofSeconds(10);

  /** The longest duration any option takes: 24 days. */
  public static final Duration MAX_DURATION = Duration.ofDays(24);

  private static final Logger LOG = LoggerFactory.getLogger(LeaderLoop.class);
  private static final long FAKE_TIME_POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

  /** The lifecycle of a loop. */
  public enum State {
    /** Built, not running yet. */
    NEW,
    /** Running, not leading: trying to take the lock. */
    STANDBY,
    /** Running and leading a term. */
    LEADER,
    /** Closed, or {@link #run} has returned. */
    CLOSED
  }

  /** Waits; injected in tests so that time can be simulated. */
  @FunctionalInterface
  public interface Sleeper {
    /**
     * Waits for a duration.
     *
     * @param duration how long
     * @throws InterruptedException if interrupted
     */
    void sleep(Duration duration) throws InterruptedException;
  }

  private final Config config;
  private final AdvisoryLock lock;
  private final String context;
  private final AtomicReference<State> state = new AtomicReference<>(State.NEW);
  private final ReentrantLock waitLock = new ReentrantLock();
  private final Condition wake = waitLock.newCondition();
  private final CountDownLatch finished = new CountDownLatch(1);
  private final AtomicReference<TermState> current = new AtomicReference<>();
  private volatile Thread runner;
  private volatile AdvisoryLock.Waiter waiter;
  private long termCounter;

  private LeaderLoop(Config config) {
    this.config = config;
    this.lock = config.lock;
    this.context = lock.context();
  }

  /**
   * Returns a builder.
   *
   * @param dataSource where sessions come from; pooled or not
   * @param key the lock key all candidates share
   * @return a builder
   */
  public static Builder builder(DataSource dataSource, LockKey key) {
    return new Builder(dataSource, key);
  }

  /**
   * Returns the lock key.
   *
   * @return the key
   */
  public LockKey key() {
    return lock.key();
  }

  /**
   * Returns this candidate's id.
   *
   * @return the id
   */
  public String candidateId() {
    return lock.candidateId();
  }

  /**
   * Returns the lock this loop contends for; {@link AdvisoryLock#currentHolder()} tells who leads.
   *
   * @return the lock
   */
  public AdvisoryLock lock() {
    return lock;
  }

  /**
   * Returns the current lifecycle state.
   *
   * @return the state
   */
  public State state() {
    return state.get();
  }

  /**
   * Returns whether this candidate leads a term right now that has not passed its self-fencing
   * deadline.
   *
   * @return true while leading
   */
  public boolean isLeader() {
    TermState ts = current.get();
    return ts != null && ts.isLeader();
  }

  /**
   * Returns the current term, while leading.
   *
   * @return the term, or empty on standby
   */
  public Optional<Term> currentTerm() {
    TermState ts = current.get();
    return ts == null || ts.ended.get() ? Optional.empty() : Optional.of(ts.term);
  }

  /**
   * Runs the loop on a new daemon thread named {@code retsu-lock-leader-<candidate>}.
   *
   * @param task the leader's task
   * @return completes when {@link #run} returns, exceptionally with what it threw
   */
  public CompletableFuture<Void> start(LeaderTask task) {
    String name = "retsu-lock-leader-" + candidateId();
    return start(
        task,
        r -> {
          Thread t = new Thread(r, name);
          t.setDaemon(true);
          return t;
        });
  }

  /**
   * Runs the loop on a thread from the given factory.
   *
   * @param task the leader's task
   * @param threadFactory makes the one thread that runs the loop
   * @return completes when {@link #run} returns, exceptionally with what it threw
   */
  public CompletableFuture<Void> start(LeaderTask task, ThreadFactory threadFactory) {
    Objects.requireNonNull(task, "task");
    Objects.requireNonNull(threadFactory, "threadFactory");
    CompletableFuture<Void> done = new CompletableFuture<>();
    Thread t =
        threadFactory.newThread(
            () -> {
              try {
                run(task);
                done.complete(null);
              } catch (Throwable e) {
                done.completeExceptionally(e);
              }
            });
    if (t == null) {
      throw new IllegalStateException("threadFactory returned no thread");
    }
    t.start();
    return done;
  }

  /**
   * Runs the loop on the calling thread until it is closed, the thread is interrupted, or a term
   * fails under {@link FailurePolicy#EXIT}.
   *
   * @param task the leader's task, called on this thread
   * @throws LeadershipLostException when a term fails under {@link FailurePolicy#EXIT}; the reason
   *     says why and the cause keeps the task's exception or the SQLException
   * @throws UnsafeSessionException when the server is a hot standby or a transaction pooler is in
   *     between (at the first attempt, or any time under {@link FailurePolicy#EXIT})
   * @throws AdvisoryLockException when the database cannot be reached at the first attempt (the
   *     SQLException is the cause)
   * @throws IllegalStateException if the loop was already run or closed
   */
  public void run(LeaderTask task) {
    Objects.requireNonNull(task, "task");
    if (!state.compareAndSet(State.NEW, State.STANDBY)) {
      throw new IllegalStateException(
          "A LeaderLoop runs once; this one is " + state.get() + " " + context);
    }
    runner = Thread.currentThread();
    LOG.info(
        "{} Leader loop started (takeover {}, retry {}, refresh {}, policy {})",
        context,
        config.takeover,
        config.retryInterval,
        config.refreshInterval,
        config.failurePolicy);
    try {
      contend(task);
    } finally {
      AdvisoryLock.Waiter w = waiter;
      if (w != null) {
        w.close();
        waiter = null;
      }
      state.set(State.CLOSED);
      runner = null;
      finished.countDown();
      LOG.info("{} Leader loop stopped", context);
    }
  }

  private void contend(LeaderTask task) {
    boolean contacted = false;
    int failedTerms = 0;
    while (!closed()) {
      long started = config.ticker.getAsLong();
      Optional<AdvisoryLockLease> acquired;
      try {
        acquired = config.takeover == TakeoverMode.WAIT ? awaitGrant() : lock.tryAcquire();
        contacted = true;
      } catch (AdvisoryLockException e) {
        waiter = null;
        notifyAttempt(AttemptResult.ERROR, started, e);
        if (e.getCause() instanceof InterruptedException) {
          Thread.currentThread().interrupt(); // keep the caller's stop request visible
          return;
        }
        if (closed()) {
          return; // e.g. close() aborted a waiting session
        }
        if (!contacted) {
          LOG.error("{} First attempt failed; giving up: {}", context, e.getMessage());
          throw e;
        }
        if (e instanceof UnsafeSessionException && config.failurePolicy == FailurePolicy.EXIT) {
          throw e;
        }
        LOG.warn(
            "{} Attempt failed, retrying in {}: {}", context, config.retryInterval, e.getMessage());
        if (!standbyWait(config.retryInterval)) {
          return;
        }
        continue;
      }
      if (acquired.isEmpty()) {
        notifyAttempt(AttemptResult.HELD_ELSEWHERE, started, null);
        if (config.takeover == TakeoverMode.WAIT) {
          if (Thread.currentThread().isInterrupted()) {
            return;
          }
          continue; // the blocking wait was the wait: re-arm at once
        }
        if (!standbyWait(jittered(config.retryInterval))) {
          return;
        }
        continue;
      }
      TermState ts;
      try {
        ts = beginTerm(acquired.get(), started);
      } catch (AdvisoryLockException e) {
        notifyAttempt(AttemptResult.ERROR, started, e);
        if (config.failurePolicy == FailurePolicy.EXIT || closed()) {
          throw e;
        }
        LOG.warn("{} Could not start a term: {}", context, e.getMessage());
        if (!standbyWait(config.retryInterval)) {
          return;
        }
        continue;
      }
      lead(ts, task);
      if (ts.reason == LossReason.CLOSED) {
        return;
      }
      if (config.failurePolicy == FailurePolicy.EXIT) {
        throw new LeadershipLostException(
            ts.reason, "Term " + ts.term.number() + " ended", lock.key(), candidateId(), ts.cause);
      }
      failedTerms = ts.refreshes > 0 ? 1 : failedTerms + 1;
      Duration backoff = backoff(failedTerms);
      LOG.info("{} Stepping down; contending again in {}", context, backoff);
      if (!standbyWait(backoff)) {
        return;
      }
    }
  }

  /** WAIT mode: one blocking wait on the standing waiter session, opened on first use. */
  private Optional<AdvisoryLockLease> awaitGrant() {
    AdvisoryLock.Waiter w = waiter;
    if (w == null) {
      w = lock.openWaiter(config.waitTimeout);
      waiter = w;
      if (closed()) {
        w.close();
        waiter = null;
        return Optional.empty();
      }
    }
    Optional<AdvisoryLockLease> granted = w.await();
    if (granted.isPresent()) {
      waiter = null; // its session now belongs to the lease
    }
    return granted;
  }

  private Duration backoff(int failedTerms) {
    Duration d = config.retryInterval;
    for (int i = 1; i < failedTerms && d.compareTo(config.maxBackoff) < 0; i++) {
      d = d.multipliedBy(2);
    }
    return d.compareTo(config.maxBackoff) > 0 ? config.maxBackoff : d;
  }

  private Duration jittered(Duration interval) {
    if (config.retryJitter == 0) {
      return interval;
    }
    double factor = 1 + (ThreadLocalRandom.current().nextDouble() * 2 - 1) * config.retryJitter;
    return Duration.ofNanos((long) (interval.toNanos() * factor));
  }

  /** Takes the fencing token and starts the term; ends the lease on failure. */
  private TermState beginTerm(AdvisoryLockLease lease, long attemptStart) {
    long proofStart = config.ticker.getAsLong();
    FencingToken token;
    try {
      token = fencingToken(lease);
    } catch (SQLException e) {
      lease.close();
      throw new AdvisoryLockException(
          "Taking the fencing token failed (SQLState " + e.getSQLState() + "); lock released",
          lock.key(),
          candidateId(),
          e);
    }
    Term term =
        new Term(
            ++termCounter,
            lock.key(),
            candidateId(),
            config.clock.instant(),
            token,
            lease.backendPid());
    TermState ts = new TermState(term, lease, proofStart);
    current.set(ts);
    if (!state.compareAndSet(State.STANDBY, State.LEADER)) {
      // Closed while acquiring: nobody heard of this term, so it ends without listeners.
      ts.abandon();
      return ts;
    }
    notifyAttempt(AttemptResult.ACQUIRED, attemptStart, null);
    LOG.info(
        "{} Leadership acquired: term {}, fencing token {}, backend pid {}",
        context,
        term.number(),
        token,
        lease.backendPid());
    for (LeaderListener l : config.listeners) {
      safely(l, "onAcquired", () -> l.onAcquired(term));
    }
    return ts;
  }

  private FencingToken fencingToken(AdvisoryLockLease lease) throws SQLException {
    return lease.withConnection(
        c -> {
          // The transactional WAL message makes the commit flush synchronously, so a crash
          // cannot hand out this xid again; synchronous_commit is forced on for this commit.
          try (PreparedStatement ps =
              c.prepareStatement(
                  "SELECT pg_current_xact_id()::text::bigint,"
                      + " ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int,"
                      + " set_config('synchronous_commit', 'on', true)"
                      + " FROM pg_logical_emit_message(true, 'retsu-lock-fence', ?)")) {
            ps.setString(1, lock.applicationName());
            try (ResultSet rs = ps.executeQuery()) {
              rs.next();
              return new FencingToken(rs.getInt(2), rs.getLong(1));
            }
          }
        });
  }

  /** Leads one term until it ends; on return {@code ts.reason} is set. */
  private void lead(TermState ts, LeaderTask task) {
    Thread watchdog = startWatchdog(ts);
    try {
      while (!ts.ended.get()) {
        if (closed()) {
          ts.end(LossReason.CLOSED, null);
          break;
        }
        if (!refresh(ts, task)) {
          break;
        }
        long nextRefresh = config.ticker.getAsLong() + config.refreshInterval.toNanos();
        if (!waitBetweenRefreshes(ts, nextRefresh)) {
          break;
        }
      }
    } finally {
      if (!ts.ended.get()) {
        ts.end(LossReason.CLOSED, null);
      }
      // Listener calls never overlap: the watchdog may still be telling them about this term.
      boolean interrupted = !ts.awaitEnd();
      watchdog.interrupt();
      interrupted |= !joinQuietly(watchdog);
      if (ts.interruptedByWatchdog) {
        // The watchdog interrupted the task to fence it; that interrupt is not a stop request.
        Thread.interrupted();
      } else if (interrupted) {
        Thread.currentThread().interrupt();
      }
      current.compareAndSet(ts, null);
      state.compareAndSet(State.LEADER, State.STANDBY);
    }
  }

  /** Runs the task once; returns false if the term ended. */
  private boolean refresh(TermState ts, LeaderTask task) {
    if (!ts.isLeader()) {
      // E.g. resumed after a pause longer than the deadline: fence before any leader work.
      ts.fence(
          LossReason.SELF_FENCED,
          new TimeoutException("No proof that the session is alive for " + config.selfFenceAfter));
      return false;
    }
    long start = config.ticker.getAsLong();
    ts.taskStart = start;
    ts.taskDeadline = start + config.taskTimeout.toNanos();
    ts.wakeWatchdog();
    Throwable failure = null;
    try {
      task.refresh(ts);
    } catch (Throwable t) {
      failure = t;
    } finally {
      ts.taskDeadline = Long.MAX_VALUE;
    }
    Duration took = Duration.ofNanos(config.ticker.getAsLong() - start);
    if (ts.ended.get()) {
      return false; // fenced, timed out or closed while the task ran
    }
    if (failure != null) {
      if (isStopRequest(failure)) {
        Thread.currentThread().interrupt();
        ts.end(LossReason.CLOSED, null);
        return false;
      }
      LOG.warn("{} Refresh of term {} failed", context, ts.term.number(), failure);
      Throwable error = failure;
      for (LeaderListener l : config.listeners) {
        safely(l, "onRefreshFailed", () -> l.onRefreshFailed(ts.term, took, error));
      }
      LossReason reason =
          Diagnostics.isSessionLost(Diagnostics.sqlState(failure))
              ? LossReason.SESSION_LOST
              : LossReason.REFRESH_FAILED;
      ts.end(reason, failure);
      return false;
    }
    ts.refreshes++;
    LOG.debug("{} Refresh of term {} took {}", context, ts.term.number(), took);
    for (LeaderListener l : config.listeners) {
      safely(l, "onRefreshSucceeded", () -> l.onRefreshSucceeded(ts.term, took));
    }
    return true;
  }

  private boolean isStopRequest(Throwable failure) {
    return closed()
        || failure instanceof InterruptedException
        || Thread.currentThread().isInterrupted();
  }

  /** Heartbeats and waits until {@code nextRefresh}; returns false if the term ended. */
  private boolean waitBetweenRefreshes(TermState ts, long nextRefresh) {
    while (!ts.ended.get()) {
      if (closed()) {
        ts.end(LossReason.CLOSED, null);
        return false;
      }
      if (Thread.currentThread().isInterrupted()) {
        ts.end(LossReason.CLOSED, null);
        return false;
      }
      long now = config.ticker.getAsLong();
      long nextBeat = ts.lastProofStart + config.heartbeatInterval.toNanos();
      if (now >= nextBeat) {
        try {
          ts.heartbeat();
        } catch (LeadershipLostException e) {
          ts.end(e.reason(), e);
          return false;
        }
        continue;
      }
      if (now >= nextRefresh) {
        return true;
      }
      long waitNanos = Math.min(nextBeat, nextRefresh) - now;
      try {
        waitOnSession(ts, waitNanos);
      } catch (SQLException e) {
        if (!ts.ended.get()) {
          LOG.debug("{} Session ended while waiting: {}", context, e.toString());
          ts.end(closed() ? LossReason.CLOSED : LossReason.SESSION_LOST, e);
        }
        return false;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        ts.end(LossReason.CLOSED, null);
        return false;
      }
    }
    return false;
  }

  private void waitOnSession(TermState ts, long nanos) throws SQLException, InterruptedException {
    if (config.sleeperInjected) {
      config.sleeper.sleep(Duration.ofNanos(nanos));
      return;
    }
    int millis =
        (int) Math.max(1, Math.min(Integer.MAX_VALUE, TimeUnit.NANOSECONDS.toMillis(nanos)));
    if (!ts.lease.awaitSessionEvent(millis)) {
      interruptibleWait(Duration.ofNanos(nanos));
    }
  }

  /** Waits on standby; returns false if the loop should stop. */
  private boolean standbyWait(Duration d) {
    try {
      if (config.sleeperInjected) {
        config.sleeper.sleep(d);
      } else {
        interruptibleWait(d);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
    return !closed() && !Thread.currentThread().isInterrupted();
  }

  private void interruptibleWait(Duration d) throws InterruptedException {
    long nanos = d.toNanos();
    waitLock.lockInterruptibly();
    try {
      while (nanos > 0 && !closed()) {
        nanos = wake.awaitNanos(nanos);
      }
    } finally {
      waitLock.unlock();
    }
  }

  private Thread startWatchdog(TermState ts) {
    Thread t = new Thread(() -> watch(ts), "retsu-lock-watchdog-" + candidateId());
    t.setDaemon(true);
    ts.watchdog = t;
    t.start();
    return t;
  }

  private void watch(TermState ts) {
    while (!ts.ended.get() && !Thread.currentThread().isInterrupted()) {
      long now = config.ticker.getAsLong();
      long fence = ts.deadline;
      long taskDeadline = ts.taskDeadline;
      if (now - fence >= 0) {
        ts.fence(
            LossReason.SELF_FENCED,
            new TimeoutException(
                "No proof that the session is alive for "
                    + config.selfFenceAfter
                    + "; stopped before the server-side bound of "
                    + config.serverBound()));
        return;
      }
      if (taskDeadline != Long.MAX_VALUE && now - taskDeadline >= 0) {
        ts.fence(
            LossReason.REFRESH_TIMED_OUT,
            new TimeoutException("The leader task ran longer than " + config.taskTimeout));
        return;
      }
      long next = Math.min(fence, taskDeadline) - now;
      LockSupport.parkNanos(
          this, config.tickerInjected ? Math.min(next, FAKE_TIME_POLL_NANOS) : next);
    }
  }

  private boolean closed() {
    return state.get() == State.CLOSED;
  }

  /** Joins a thread for up to a second; returns false if interrupted meanwhile. */
  private static boolean joinQuietly(Thread t) {
    boolean quiet = true;
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
    while (t.isAlive() && System.nanoTime() < deadline) {
      try {
        t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
      } catch (InterruptedException e) {
        quiet = false;
      }
    }
    return quiet;
  }

  /**
   * Stops the loop: ends the current term (listeners told, lock released), wakes a waiting standby
   * and waits up to the close timeout for {@link #run} to return, interrupting its thread if it
   * does not. Idempotent; never throws.
   */
  @Override
  public void close() {
    State previous = state.getAndSet(State.CLOSED);
    if (previous == State.CLOSED) {
      return;
    }
    waitLock.lock();
    try {
      wake.signalAll();
    } finally {
      waitLock.unlock();
    }
    TermState ts = current.get();
    if (ts != null) {
      ts.end(LossReason.CLOSED, null);
    }
    AdvisoryLock.Waiter w = waiter;
    if (w != null) {
      w.close(); // aborts a blocking wait at once
    }
    Thread r = runner;
    if (previous == State.NEW || r == null || r == Thread.currentThread()) {
      finished.countDown();
      return;
    }
    try {
      if (!finished.await(config.closeTimeout.toMillis(), TimeUnit.MILLISECONDS)) {
        LOG.warn(
            "{} run() did not return within {} of close(); interrupting {}",
            context,
            config.closeTimeout,
            r.getName());
        r.interrupt();
        if (!finished.await(config.closeTimeout.toMillis(), TimeUnit.MILLISECONDS)) {
          LOG.warn("{} run() still has not returned; the leader task ignores interrupts", context);
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void notifyAttempt(AttemptResult result, long startedNanos, Throwable error) {
    Duration took = Duration.ofNanos(config.ticker.getAsLong() - startedNanos);
    LOG.debug("{} Attempt: {} in {}", context, result, took);
    for (LeaderListener l : config.listeners) {
      safely(l, "onAttempt", () -> l.onAttempt(result, took, error));
    }
  }

  private void safely(LeaderListener listener, String method, Runnable call) {
    try {
      call.run();
    } catch (RuntimeException | LinkageError e) {
      LOG.warn(
          "{} Listener {}.{} threw; ignored", context, listener.getClass().getName(), method, e);
    }
  }

  @Override
  public String toString() {
    return "LeaderLoop" + context + "{" + state.get() + "}";
  }

  /** One term: its lease, deadlines and how it ended. Shared by the runner and the watchdog. */
  private final class TermState implements LeaderContext {
    final Term term;
    final AdvisoryLockLease lease;
    final AtomicBoolean ended = new AtomicBoolean();
    final CountDownLatch endDone = new CountDownLatch(1);
    volatile long lastProofStart;
    volatile long deadline;
    volatile long taskStart;
    volatile long taskDeadline = Long.MAX_VALUE;
    volatile LossReason reason;
    volatile Throwable cause;
    volatile boolean interruptedByWatchdog;
    volatile Thread watchdog;
    int refreshes;

    TermState(Term term, AdvisoryLockLease lease, long proofStart) {
      this.term = term;
      this.lease = lease;
      this.lastProofStart = proofStart;
      this.deadline = proofStart + config.selfFenceAfter.toNanos();
    }

    void wakeWatchdog() {
      Thread t = watchdog;
      if (t != null) {
        LockSupport.unpark(t);
      }
    }

    @Override
    public Term term() {
      return term;
    }

    @Override
    public Connection connection() {
      return lease.connection();
    }

    @Override
    public <T> T withConnection(SqlFunction<T> work) throws SQLException {
      return lease.withConnection(work);
    }

    @Override
    public boolean isLeader() {
      return !ended.get() && config.ticker.getAsLong() - deadline < 0;
    }

    @Override
    public void ensureLeader() {
      if (ended.get()) {
        throw new LeadershipLostException(
            reason != null ? reason : LossReason.CLOSED,
            "Term " + term.number() + " is over",
            lock.key(),
            candidateId(),
            cause);
      }
      if (config.ticker.getAsLong() - deadline >= 0) {
        TimeoutException late =
            new TimeoutException("No proof that the session is alive for " + config.selfFenceAfter);
        fence(LossReason.SELF_FENCED, late);
        throw new LeadershipLostException(
            LossReason.SELF_FENCED,
            "Term " + term.number() + " self-fenced",
            lock.key(),
            candidateId(),
            late);
      }
    }

    @Override
    public void heartbeat() {
      ensureLeader();
      long start = config.ticker.getAsLong();
      long remaining = TimeUnit.NANOSECONDS.toMillis(deadline - start);
      int timeout = (int) Math.max(1, Math.min(lock.timeoutMillis(), remaining));
      lease.verify(timeout);
      long newDeadline = start + config.selfFenceAfter.toNanos();
      if (newDeadline - deadline > 0) {
        deadline = newDeadline;
      }
      lastProofStart = start;
      LOG.debug("{} Heartbeat ok for term {}", context, term.number());
    }

    /**
     * Ends the term from the watchdog (or a late ensureLeader): the context turns invalid first,
     * then the task is interrupted, then listeners are told and the lock released.
     */
    void fence(LossReason why, Throwable error) {
      if (!claim(why, error)) {
        return;
      }
      Thread r = runner;
      if (why == LossReason.REFRESH_TIMED_OUT) {
        Duration took = Duration.ofNanos(config.ticker.getAsLong() - taskStart);
        for (LeaderListener l : config.listeners) {
          safely(l, "onRefreshFailed", () -> l.onRefreshFailed(term, took, error));
        }
      }
      if (r != null && r != Thread.currentThread() && taskDeadline != Long.MAX_VALUE) {
        interruptedByWatchdog = true;
        r.interrupt();
      }
      finish();
    }

    /** Ends a term nobody heard of (closed while acquiring): no listeners, just the lock. */
    void abandon() {
      if (claim(LossReason.CLOSED, null)) {
        try {
          lease.close();
        } finally {
          endDone.countDown();
        }
      }
    }

    /** Ends the term once: invalid at once, listeners told, then the lock released. */
    void end(LossReason why, Throwable error) {
      if (claim(why, error)) {
        finish();
      }
    }

    /**
     * Marks the term over (so the context is invalid at once); true for the one caller that wins.
     */
    private boolean claim(LossReason why, Throwable error) {
      if (!ended.compareAndSet(false, true)) {
        return false;
      }
      reason = why;
      cause = error;
      state.compareAndSet(State.LEADER, State.STANDBY);
      return true;
    }

    private void finish() {
      LossReason why = reason;
      Throwable error = cause;
      Duration held = Duration.between(term.start(), config.clock.instant());
      if (why == LossReason.CLOSED) {
        LOG.info("{} Leadership released (CLOSED) after {}: term {}", context, held, term.number());
      } else {
        LOG.info(
            "{} Leadership lost ({}) after {}: term {}, token {}: {}",
            context,
            why,
            held,
            term.number(),
            term.fencingToken(),
            error == null ? "" : error.toString());
      }
      try {
        for (LeaderListener l : config.listeners) {
          safely(l, "onLost", () -> l.onLost(term, why, error));
        }
      } finally {
        try {
          lease.close();
        } finally {
          endDone.countDown();
        }
      }
    }

    /**
     * Waits until whoever ended the term has told the listeners and released the lock.
     *
     * @return false if an interrupt arrived while waiting (the wait went on regardless)
     */
    boolean awaitEnd() {
      boolean quiet = true;
      long deadline = System.nanoTime() + config.closeTimeout.toNanos();
      while (true) {
        try {
          if (!endDone.await(deadline - System.nanoTime(), TimeUnit.NANOSECONDS)) {
            LOG.warn("{} A listener has been in onLost for over {}", context, config.closeTimeout);
          }
          return quiet;
        } catch (InterruptedException e) {
          quiet = false;
        }
      }
    }
  }

  /** The immutable settings of a loop. */
  private static final class Config {
    AdvisoryLock lock;
    Duration retryInterval;
    Duration refreshInterval;
    double retryJitter;
    FailurePolicy failurePolicy;
    Duration taskTimeout;
    Duration heartbeatInterval;
    Duration selfFenceAfter;
    Duration keepaliveIdle;
    Duration keepaliveInterval;
    int keepaliveCount;
    Duration idleSessionTimeout;
    Duration maxBackoff;
    Duration closeTimeout;
    TakeoverMode takeover;
    Duration waitTimeout;
    List<LeaderListener> listeners;
    Clock clock;
    LongSupplier ticker;
    boolean tickerInjected;
    Sleeper sleeper;
    boolean sleeperInjected;

    Duration keepaliveBound() {
      return keepaliveIdle.plus(keepaliveInterval.multipliedBy(keepaliveCount));
    }

    Duration serverBound() {
      Duration keep = keepaliveBound();
      return idleSessionTimeout.isZero() || keep.compareTo(idleSessionTimeout) < 0
          ? keep
          : idleSessionTimeout;
    }
  }

  /**
   * Options of a {@link LeaderLoop}; every option has a public default. Not thread-safe; {@link
   * #build()} validates and copies.
   */
  public static final class Builder {
    private final DataSource dataSource;
    private final LockKey key;
    private String candidateId;
    private Duration retryInterval = DEFAULT_RETRY_INTERVAL;
    private Duration refreshInterval = DEFAULT_REFRESH_INTERVAL;
    private double retryJitter = DEFAULT_RETRY_JITTER;
    private FailurePolicy failurePolicy = DEFAULT_FAILURE_POLICY;
    private Duration taskTimeout = DEFAULT_TASK_TIMEOUT;
    private Duration heartbeatInterval = DEFAULT_HEARTBEAT_INTERVAL;
    private Duration selfFenceAfter = DEFAULT_SELF_FENCE_AFTER;
    private Duration keepaliveIdle = DEFAULT_KEEPALIVE_IDLE;
    private Duration keepaliveInterval = DEFAULT_KEEPALIVE_INTERVAL;
    private int keepaliveCount = DEFAULT_KEEPALIVE_COUNT;
    private Duration idleSessionTimeout = DEFAULT_IDLE_SESSION_TIMEOUT;
    private Duration roundTripTimeout = AdvisoryLock.DEFAULT_ROUND_TRIP_TIMEOUT;
    private Duration maxBackoff = DEFAULT_MAX_BACKOFF;
    private Duration closeTimeout = DEFAULT_CLOSE_TIMEOUT;
    private TakeoverMode takeover = DEFAULT_TAKEOVER;
    private Duration waitTimeout = DEFAULT_WAIT_TIMEOUT;
    private final List<LeaderListener> listeners = new ArrayList<>();
    private Clock clock = Clock.systemUTC();
    private LongSupplier ticker = System::nanoTime;
    private boolean tickerInjected;
    private Sleeper sleeper;

    private Builder(DataSource dataSource, LockKey key) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
      this.key = Objects.requireNonNull(key, "key");
    }

    /**
     * Sets the candidate id, shown in logs, metrics and the session's {@code application_name}.
     * Defaults to {@link AdvisoryLock#defaultCandidateId()} (host, pid, random suffix).
     *
     * @param candidateId 1 to 100 printable characters
     * @return this builder
     */
    public Builder candidateId(String candidateId) {
      this.candidateId = AdvisoryLock.validateCandidateId(candidateId);
      return this;
    }

    /**
     * Sets the wait between standby attempts. Defaults to 15 seconds.
     *
     * @param interval positive
     * @return this builder
     */
    public Builder retryInterval(Duration interval) {
      this.retryInterval = positive("retryInterval", interval);
      return this;
    }

    /**
     * Sets the wait between the end of one refresh and the start of the next. Defaults to 15
     * seconds.
     *
     * @param interval positive
     * @return this builder
     */
    public Builder refreshInterval(Duration interval) {
      this.refreshInterval = positive("refreshInterval", interval);
      return this;
    }

    /**
     * Sets the retry jitter: each standby wait is drawn uniformly from {@code retryInterval × (1 ±
     * jitter)}, so candidates that start together spread out. Defaults to 0.1.
     *
     * @param jitter from 0 (none) up to, not including, 1
     * @return this builder
     */
    public Builder retryJitter(double jitter) {
      if (!(jitter >= 0 && jitter < 1)) {
        throw new IllegalArgumentException("retryJitter must be within [0, 1), but was " + jitter);
      }
      this.retryJitter = jitter;
      return this;
    }

    /**
     * Sets what happens when a term fails. Defaults to {@link FailurePolicy#EXIT}.
     *
     * @param policy the policy
     * @return this builder
     */
    public Builder failurePolicy(FailurePolicy policy) {
      this.failurePolicy = Objects.requireNonNull(policy, "failurePolicy");
      return this;
    }

    /**
     * Sets the limit on one run of the leader task; past it the task is interrupted, its session
     * aborted and the term ends with {@link LossReason#REFRESH_TIMED_OUT}. Note that a task that
     * does not call {@link LeaderContext#heartbeat()} is also bounded by {@code selfFenceAfter}.
     * Defaults to 60 seconds.
     *
     * @param timeout positive
     * @return this builder
     */
    public Builder taskTimeout(Duration timeout) {
      this.taskTimeout = positive("taskTimeout", timeout);
      return this;
    }

    /**
     * Sets how often the leader proves its session between refreshes (one round trip). Must be at
     * most half of {@code selfFenceAfter}. Defaults to 2 seconds.
     *
     * @param interval positive
     * @return this builder
     */
    public Builder heartbeatInterval(Duration interval) {
      this.heartbeatInterval = positive("heartbeatInterval", interval);
      return this;
    }

    /**
     * Sets the self-fencing deadline, counted from the start of the last successful round trip.
     * Must be shorter than the server-side bound (see {@link #serverKeepalives} and {@link
     * #serverIdleSessionTimeout}) by at least {@link #MIN_FENCING_MARGIN}. Defaults to 8 seconds.
     *
     * @param deadline positive
     * @return this builder
     */
    public Builder selfFenceAfter(Duration deadline) {
      this.selfFenceAfter = positive("selfFenceAfter", deadline);
      return this;
    }

    /**
     * Sets the TCP keepalives the server uses on the leader's session ({@code tcp_keepalives_idle},
     * {@code _interval}, {@code _count}; {@code tcp_user_timeout} is set to their sum). PostgreSQL
     * ends a partitioned leader's session, releasing the lock, after about {@code idle + interval ×
     * count}. Defaults to 5 s, 2 s and 3 (11 seconds). Over a Unix socket they do not apply.
     *
     * @param idle whole seconds, at least 1
     * @param interval whole seconds, at least 1
     * @param count at least 1
     * @return this builder
     */
    public Builder serverKeepalives(Duration idle, Duration interval, int count) {
      this.keepaliveIdle = wholeSeconds("keepaliveIdle", idle);
      this.keepaliveInterval = wholeSeconds("keepaliveInterval", interval);
      if (count < 1 || count > 1000) {
        throw new IllegalArgumentException(
            "keepaliveCount must be within 1..1000, but was " + count);
      }
      this.keepaliveCount = count;
      return this;
    }

    /**
     * Sets {@code idle_session_timeout} on the leader's session: PostgreSQL ends a session that
     * stays idle this long, which also catches a leader whose process is alive but paused or hung
     * (keepalives cannot: its kernel still answers them). {@link Duration#ZERO} turns it off.
     * Defaults to 20 seconds.
     *
     * @param timeout zero, or at least 1 second in whole milliseconds
     * @return this builder
     */
    public Builder serverIdleSessionTimeout(Duration timeout) {
      Objects.requireNonNull(timeout, "idleSessionTimeout");
      if (!timeout.isZero() && timeout.compareTo(Duration.ofSeconds(1)) < 0) {
        throw new IllegalArgumentException(
            "idleSessionTimeout must be zero (off) or at least 1 second, but was " + timeout);
      }
      if (timeout.compareTo(MAX_DURATION) > 0) {
        throw new IllegalArgumentException(
            "idleSessionTimeout must be at most " + MAX_DURATION + ", but was " + timeout);
      }
      this.idleSessionTimeout = timeout;
      return this;
    }

    /**
     * Sets the network timeout of each round trip the loop makes itself (attempts, heartbeats;
     * heartbeats are also cut at the self-fencing deadline). Defaults to 10 seconds.
     *
     * @param timeout positive
     * @return this builder
     */
    public Builder roundTripTimeout(Duration timeout) {
      this.roundTripTimeout = AdvisoryLock.validateTimeout("roundTripTimeout", timeout);
      return this;
    }

    /**
     * Sets the longest wait between failed terms under {@link FailurePolicy#STEP_DOWN}; the wait
     * starts at {@code retryInterval} and doubles while terms keep failing before their first
     * successful refresh. Defaults to 5 minutes.
     *
     * @param max positive
     * @return this builder
     */
    public Builder maxBackoff(Duration max) {
      this.maxBackoff = positive("maxBackoff", max);
      return this;
    }

    /**
     * Sets how long {@link LeaderLoop#close()} waits for {@code run} to return before interrupting
     * its thread. Defaults to 10 seconds.
     *
     * @param timeout positive
     * @return this builder
     */
    public Builder closeTimeout(Duration timeout) {
      this.closeTimeout = positive("closeTimeout", timeout);
      return this;
    }

    /**
     * Sets how a standby waits for the lock. {@link TakeoverMode#WAIT} keeps one connection blocked
     * in {@code pg_advisory_lock}, so takeover costs about one round trip instead of up to a retry
     * interval, at the price of one connection per standby. Defaults to {@link TakeoverMode#POLL}.
     *
     * @param mode the mode
     * @return this builder
     */
    public Builder takeover(TakeoverMode mode) {
      this.takeover = Objects.requireNonNull(mode, "takeover");
      return this;
    }

    /**
     * Sets the longest single blocking wait in {@link TakeoverMode#WAIT} ({@code lock_timeout});
     * the wait is then re-armed, so an interrupt is noticed within this time ({@link
     * LeaderLoop#close()} aborts the wait at once). Defaults to 5 seconds.
     *
     * @param timeout at least 10 ms
     * @return this builder
     */
    public Builder waitTimeout(Duration timeout) {
      positive("waitTimeout", timeout);
      if (timeout.toMillis() < 10) {
        throw new IllegalArgumentException("waitTimeout must be at least 10ms, but was " + timeout);
      }
      this.waitTimeout = timeout;
      return this;
    }

    /**
     * Adds a listener; listeners are called in the order added.
     *
     * @param listener the listener
     * @return this builder
     */
    public Builder listener(LeaderListener listener) {
      listeners.add(Objects.requireNonNull(listener, "listener"));
      return this;
    }

    /**
     * Sets the wall clock for term start instants. Defaults to the system UTC clock.
     *
     * @param clock the clock
     * @return this builder
     */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /**
     * Sets the monotonic time source for deadlines and durations, in nanoseconds. Defaults to
     * {@link System#nanoTime()}. For tests that simulate time together with {@link #sleeper}.
     *
     * @param nanoTime the time source
     * @return this builder
     */
    public Builder ticker(LongSupplier nanoTime) {
      this.ticker = Objects.requireNonNull(nanoTime, "ticker");
      this.tickerInjected = true;
      return this;
    }

    /**
     * Sets how the loop waits, for tests that simulate time. With a sleeper the leader waits
     * between heartbeats by sleeping instead of reading its session's socket, and a waiting standby
     * is not woken early by {@link LeaderLoop#close()}.
     *
     * @param sleeper the sleeper
     * @return this builder
     */
    public Builder sleeper(Sleeper sleeper) {
      this.sleeper = Objects.requireNonNull(sleeper, "sleeper");
      return this;
    }

    /**
     * Validates the options and builds the loop.
     *
     * @return the loop
     * @throws IllegalStateException when options contradict the safety guarantees
     */
    public LeaderLoop build() {
      Config c = new Config();
      c.retryInterval = retryInterval;
      c.refreshInterval = refreshInterval;
      c.retryJitter = retryJitter;
      c.failurePolicy = failurePolicy;
      c.taskTimeout = taskTimeout;
      c.heartbeatInterval = heartbeatInterval;
      c.selfFenceAfter = selfFenceAfter;
      c.keepaliveIdle = keepaliveIdle;
      c.keepaliveInterval = keepaliveInterval;
      c.keepaliveCount = keepaliveCount;
      c.idleSessionTimeout = idleSessionTimeout;
      c.maxBackoff = maxBackoff;
      c.closeTimeout = closeTimeout;
      c.takeover = takeover;
      c.waitTimeout = waitTimeout;
      c.listeners = List.copyOf(listeners);
      c.clock = clock;
      c.ticker = ticker;
      c.tickerInjected = tickerInjected;
      c.sleeperInjected = sleeper != null;
      c.sleeper = sleeper;
      Duration bound = c.serverBound();
      if (selfFenceAfter.plus(MIN_FENCING_MARGIN).compareTo(bound) > 0) {
        throw new IllegalStateException(
            "selfFenceAfter must be at least "
                + MIN_FENCING_MARGIN
                + " shorter than the server-side bound "
                + bound
                + " (tcp keepalives "
                + c.keepaliveBound()
                + (idleSessionTimeout.isZero()
                    ? ""
                    : ", idle_session_timeout " + idleSessionTimeout)
                + "), but was "
                + selfFenceAfter);
      }
      if (heartbeatInterval.multipliedBy(2).compareTo(selfFenceAfter) > 0) {
        throw new IllegalStateException(
            "heartbeatInterval must be at most half of selfFenceAfter ("
                + selfFenceAfter
                + ") so that one slow heartbeat does not fence a healthy leader, but was "
                + heartbeatInterval);
      }
      AdvisoryLock.Builder lockBuilder =
          AdvisoryLock.builder(dataSource, key)
              .roundTripTimeout(roundTripTimeout)
              .sessionSetting("tcp_keepalives_idle", Long.toString(keepaliveIdle.toSeconds()))
              .sessionSetting(
                  "tcp_keepalives_interval", Long.toString(keepaliveInterval.toSeconds()))
              .sessionSetting("tcp_keepalives_count", Integer.toString(keepaliveCount))
              .sessionSetting("tcp_user_timeout", Long.toString(c.keepaliveBound().toMillis()))
              .sessionSetting(
                  "client_connection_check_interval", Long.toString(keepaliveInterval.toMillis()))
              .sessionSetting("idle_session_timeout", Long.toString(idleSessionTimeout.toMillis()));
      if (candidateId != null) {
        lockBuilder.candidateId(candidateId);
      }
      c.lock = lockBuilder.build();
      return new LeaderLoop(c);
    }

    private static Duration positive(String name, Duration d) {
      Objects.requireNonNull(d, name);
      if (d.isNegative() || d.isZero()) {
        throw new IllegalArgumentException(name + " must be positive, but was " + d);
      }
      if (d.compareTo(MAX_DURATION) > 0) {
        throw new IllegalArgumentException(
            name + " must be at most " + MAX_DURATION + ", but was " + d);
      }
      return d;
    }

    private static Duration wholeSeconds(String name, Duration d) {
      positive(name, d);
      if (d.toNanos() % 1_000_000_000L != 0 || d.toSeconds() > 3600) {
        throw new IllegalArgumentException(
            name + " must be whole seconds within 1..3600, but was " + d);
      }
      return d;
    }
  }
}
