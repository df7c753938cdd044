package dev.retsu.lock;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Elects one leader among candidates that share a {@link LockKey}, and runs the leader's task.
 *
 * <pre>
 * start -&gt; try lock --held elsewhere--&gt; wait retryInterval (15 s, jittered) -&gt; try lock
 *                   --acquired--&gt; refresh now --ok--&gt; wait refreshInterval (15 s) -&gt; refresh
 *                                              --fails--&gt; end term: stop the refresh, notify,
 *                                                         release the lock;
 *                                                         STEP_DOWN: back to standby (default)
 *                                                         EXIT: run() throws to the caller
 * </pre>
 *
 * <ul>
 *   <li><b>Standby</b> holds no connection between attempts ({@link TakeoverMode#POLL}), or one
 *       session blocked in the server's lock queue ({@link TakeoverMode#WAIT}).
 *   <li><b>Leader</b> keeps the one session that holds the lock for the whole term; the task runs
 *       on it ({@link LeaderContext#connection()}). At most one candidate acts as leader: {@link
 *       LeaderContext#ensureLeader()} fails once the term is over, and a term ends (turns invalid)
 *       before the lock can reach anyone else. See {@link LeaderContext} and docs/GUARANTEES.md.
 *   <li><b>Close</b> stops the running refresh (interrupted, awaited up to {@code closeTimeout}),
 *       then tells listeners, then releases the lock: a rolling deploy hands over without overlap.
 *   <li><b>Never stuck, never silent.</b> After any failure the loop contends again ({@link
 *       FailurePolicy#STEP_DOWN}) or {@link #run} throws ({@link FailurePolicy#EXIT}); a loop that
 *       stopped shows it in {@link #state()} and {@link #failure()}.
 * </ul>
 *
 * <p>{@link #run(LeaderTask)} blocks the calling thread; {@link #start(LeaderTask)} runs it on a
 * new daemon thread, {@link #start(LeaderTask, ThreadFactory)} on yours (a virtual-thread factory
 * works: the library blocks under {@code ReentrantLock}, never {@code synchronized}). A loop runs
 * once. {@link #close()} from any thread stops it within a bounded time. Thread-safe.
 */
public final class LeaderLoop implements AutoCloseable {

  /** Default wait between standby attempts: 15 seconds. */
  public static final Duration DEFAULT_RETRY_INTERVAL = Duration.ofSeconds(15);

  /** Default wait between refreshes: 15 seconds. */
  public static final Duration DEFAULT_REFRESH_INTERVAL = Duration.ofSeconds(15);

  /** Default retry jitter: each standby wait is drawn from retryInterval ± 10%. */
  public static final double DEFAULT_RETRY_JITTER = 0.1;

  /**
   * Default failure policy: {@link FailurePolicy#STEP_DOWN}, so one failed refresh in an embedded
   * library never leaves a service where nobody leads. The Retsu collector sets {@link
   * FailurePolicy#EXIT}.
   */
  public static final FailurePolicy DEFAULT_FAILURE_POLICY = FailurePolicy.STEP_DOWN;

  /** Default limit on one refresh: 60 seconds. */
  public static final Duration DEFAULT_REFRESH_TIMEOUT = Duration.ofSeconds(60);

  /** Default interval between ownership proofs while leading: 2 seconds. */
  public static final Duration DEFAULT_HEARTBEAT_INTERVAL = Duration.ofSeconds(2);

  /** Default self-fencing deadline: 8 seconds after the start of the last successful round trip. */
  public static final Duration DEFAULT_SELF_FENCE_AFTER = Duration.ofSeconds(8);

  /** Default {@code tcp_keepalives_idle} on the leader's session: 5 seconds. */
  public static final Duration DEFAULT_KEEPALIVE_IDLE = Duration.ofSeconds(5);

  /** Default {@code tcp_keepalives_interval} on the leader's session: 2 seconds. */
  public static final Duration DEFAULT_KEEPALIVE_INTERVAL = Duration.ofSeconds(2);

  /** Default {@code tcp_keepalives_count} on the leader's session: 3. */
  public static final int DEFAULT_KEEPALIVE_COUNT = 3;

  /**
   * Default {@code idle_session_timeout} on the leader's session: 11 seconds, the keepalive bound,
   * so a paused leader (SIGSTOP, a long GC, a frozen VM, whose kernel still answers keepalives) is
   * released as soon as a vanished one. Heartbeats keep a healthy leader's session busier than
   * that.
   */
  public static final Duration DEFAULT_IDLE_SESSION_TIMEOUT = Duration.ofSeconds(11);

  /** The least gap between the self-fencing deadline and the server-side bound: 1 second. */
  public static final Duration MIN_FENCING_MARGIN = ServerBounds.MIN_FENCING_MARGIN;

  /** Default longest wait between failed terms under {@link FailurePolicy#STEP_DOWN}: 5 minutes. */
  public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofMinutes(5);

  /** Default takeover mode: {@link TakeoverMode#POLL}. */
  public static final TakeoverMode DEFAULT_TAKEOVER = TakeoverMode.POLL;

  /**
   * Default longest single wait in {@link TakeoverMode#WAIT} before it is re-armed: 5 minutes. Each
   * re-arm leaves one {@code lock_timeout} ERROR line in the server log and each wait runs one
   * deadlock check, so re-arms are rare; the waiting client's own keepalives, not the re-arm,
   * notice a dead server.
   */
  public static final Duration DEFAULT_WAIT_TIMEOUT = Duration.ofMinutes(5);

  /** Default time {@link #close()} waits for a running refresh to stop: 10 seconds. */
  public static final Duration DEFAULT_CLOSE_TIMEOUT = Duration.ofSeconds(10);

  /** The longest duration any option takes: 24 days. */
  public static final Duration MAX_DURATION = dev.retsu.lock.internal.Checks.MAX_DURATION;

  private static final Logger LOG = LoggerFactory.getLogger(LeaderLoop.class);

  /** The lifecycle of a loop; whether it leads is {@link #isLeader()}. */
  public enum State {
    /** Built, not running yet. */
    NEW,
    /** Running: leading or contending. */
    RUNNING,
    /** {@link #run} ended by throwing ({@link #failure()} says what); nobody here contends. */
    FAILED,
    /** Closed, or {@link #run} returned. */
    CLOSED
  }

  private final LoopSettings settings;
  private final String context;
  private final Listeners listeners;
  private final Standby standby;
  private final Wakeup wakeup;
  private final AtomicReference<State> state = new AtomicReference<>(State.NEW);
  private final AtomicBoolean closing = new AtomicBoolean();
  private final CountDownLatch finished = new CountDownLatch(1);
  private volatile LeaderTerm current;
  private volatile Thread runner;
  private volatile Throwable failure;
  private long termCounter;

  LeaderLoop(LoopSettings settings) {
    this.settings = settings;
    this.context = settings.context();
    this.listeners = new Listeners(settings.listeners(), context);
    this.standby = new Standby(settings);
    this.wakeup = new Wakeup(settings.time(), closing::get);
  }

  /**
   * Returns a builder.
   *
   * @param dataSource where sessions come from; pooled or not
   * @param key the lock key all candidates share
   * @return a builder
   */
  public static LeaderLoopBuilder builder(DataSource dataSource, LockKey key) {
    return new LeaderLoopBuilder(dataSource, key);
  }

  /**
   * Returns the lock key.
   *
   * @return the key
   */
  public LockKey key() {
    return settings.lock().key();
  }

  /**
   * Returns this candidate's id.
   *
   * @return the id
   */
  public String candidateId() {
    return settings.lock().candidateId();
  }

  /**
   * Returns who holds the key right now (any candidate, or any session), with one query on a
   * borrowed connection.
   *
   * @return the holder, or empty if nobody holds it
   * @throws AdvisoryLockException if the query fails
   */
  public Optional<LockHolder> currentHolder() {
    return settings.lock().currentHolder();
  }

  /**
   * Adds a listener to a loop that may already run, as metrics binders do when they are bound. It
   * hears what happens from now on: during a term, that term's refreshes and {@code onLost} but not
   * its {@code onAcquired} (read {@link #currentTerm()} to catch up). Calls stay serialised with
   * the other listeners'.
   *
   * @param listener the listener
   */
  public void addListener(LeaderListener listener) {
    listeners.add(listener);
  }

  /**
   * Removes a listener added here or on the builder; it hears nothing after this returns, unless a
   * call to it is in progress.
   *
   * @param listener the listener
   * @return true if it was registered
   */
  public boolean removeListener(LeaderListener listener) {
    return listeners.remove(listener);
  }

  /**
   * Returns the lifecycle state.
   *
   * @return the state
   */
  public State state() {
    return state.get();
  }

  /**
   * Returns what {@link #run} threw, once the loop is {@link State#FAILED}.
   *
   * @return the failure, or empty
   */
  public Optional<Throwable> failure() {
    return Optional.ofNullable(failure);
  }

  /**
   * Returns whether this candidate leads a term right now that has not ended or passed its
   * self-fencing deadline. A local hint; the task checks with {@link LeaderContext#ensureLeader()}.
   *
   * @return true while leading
   */
  public boolean isLeader() {
    LeaderTerm t = current;
    return t != null && t.isLeader();
  }

  /**
   * Returns the current term, while leading.
   *
   * @return the term, or empty when not leading
   */
  public Optional<Term> currentTerm() {
    LeaderTerm t = current;
    return t == null || t.ended() ? Optional.empty() : Optional.of(t.term());
  }

  /**
   * Runs the loop on a new daemon thread named {@code retsu-lock-leader-<candidate>}. Keep the
   * returned future: it completes exceptionally with what {@link #run} threw.
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
   * Runs the loop on a thread from the given factory, such as {@code
   * Thread.ofVirtual().name("retsu-lock-leader").factory()}.
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
    if (!state.compareAndSet(State.NEW, State.RUNNING)) {
      throw new IllegalStateException(
          "A LeaderLoop runs once; this one is " + state.get() + " " + context);
    }
    runner = Thread.currentThread();
    LOG.info(
        "{} Leader loop started (takeover {}, retry {}, refresh {}, policy {}, {})",
        context,
        settings.takeover(),
        settings.retryInterval(),
        settings.refreshInterval(),
        settings.failurePolicy(),
        settings.bounds());
    try {
      contend(task);
      state.set(State.CLOSED);
    } catch (RuntimeException | Error e) {
      failure = e;
      state.set(State.FAILED);
      LOG.error("{} Leader loop failed; this candidate no longer contends", context, e);
      throw e;
    } finally {
      standby.close();
      runner = null;
      finished.countDown();
      LOG.info("{} Leader loop stopped", context);
    }
  }

  /** The contend loop: attempt, lead when acquired, apply the failure policy, wait. */
  private void contend(LeaderTask task) {
    int failedTerms = 0;
    while (!closing.get()) {
      long started = settings.time().nanoTime();
      Optional<AdvisoryLockLease> lease;
      try {
        lease = standby.attempt();
      } catch (AdvisoryLockException e) {
        listeners.attempt(AttemptResult.ERROR, since(started), e);
        if (closing.get() || e.getCause() instanceof InterruptedException) {
          return;
        }
        if (!standby.reachedDatabase() || fatal(e)) {
          throw e;
        }
        LOG.warn(
            "{} Attempt failed, retrying in {}: {}",
            context,
            settings.retryInterval(),
            e.getMessage());
        if (!pause(settings.retryInterval())) {
          return;
        }
        continue;
      }
      if (lease.isEmpty()) {
        listeners.attempt(AttemptResult.HELD_ELSEWHERE, since(started), null);
        if (!pause(standby.afterHeldElsewhere())) {
          return;
        }
        continue;
      }
      LeaderTerm term = begin(lease.get(), started);
      if (term == null) {
        continue; // closed while acquiring, or the token failed under STEP_DOWN
      }
      TermRunner runs = new TermRunner(term, listeners, wakeup, closing::get);
      LossReason reason = runs.lead(task);
      current = null;
      if (reason == LossReason.CLOSED) {
        return;
      }
      if (settings.failurePolicy() == FailurePolicy.EXIT || reason == LossReason.POOLER_DETECTED) {
        throw new LeadershipLostException(
            reason, "Term " + term.term().number() + " ended", key(), candidateId(), term.cause());
      }
      failedTerms = runs.refreshes() > 0 ? 1 : failedTerms + 1;
      Duration backoff = standby.backoff(failedTerms);
      LOG.info("{} Stepping down; contending again in {}", context, backoff);
      if (!pause(backoff)) {
        return;
      }
    }
  }

  /**
   * Whether an attempt's failure ends the loop whatever the policy: any unsafe session under EXIT,
   * and a transaction-mode pooler always (a configuration error that retrying cannot fix, and every
   * retry would take the lock on a shared backend). A hot standby under STEP_DOWN is retried: a
   * failover may promote it.
   */
  private boolean fatal(AdvisoryLockException e) {
    if (!(e instanceof UnsafeSessionException)) {
      return false;
    }
    return settings.failurePolicy() == FailurePolicy.EXIT
        || ((UnsafeSessionException) e).reason() == LossReason.POOLER_DETECTED;
  }

  /** Takes the fencing token and announces the term; null if it did not start. */
  private LeaderTerm begin(AdvisoryLockLease lease, long attemptStart) {
    TimeSource time = settings.time();
    long proofStart = time.nanoTime();
    long proofWall = time.wallMillis();
    FencingToken token;
    try {
      token = lease.fencingToken();
    } catch (java.sql.SQLException e) {
      lease.close();
      return notStarted(
          attemptStart,
          new AdvisoryLockException(
              "Taking the fencing token failed (SQLState " + e.getSQLState() + "); lock released",
              key(),
              candidateId(),
              e));
    } catch (AdvisoryLockException e) {
      lease.close();
      return notStarted(attemptStart, e);
    }
    Term t = new Term(++termCounter, key(), candidateId(), time.now(), token, lease.backendPid());
    LeaderTerm term =
        new LeaderTerm(
            t, lease, settings, listeners, Thread.currentThread(), proofStart, proofWall);
    current = term;
    if (closing.get()) {
      current = null;
      term.end(LossReason.CLOSED, null); // nobody heard of it: no listeners, just the lock
      return null;
    }
    listeners.attempt(AttemptResult.ACQUIRED, since(attemptStart), null);
    LOG.info(
        "{} Leadership acquired: term {}, fencing token {}, backend pid {}, database {}",
        context,
        t.number(),
        token,
        lease.backendPid(),
        lease.database());
    listeners.acquired(term);
    return term;
  }

  /** A term that could not start (its token failed): the lock is released already; null. */
  private LeaderTerm notStarted(long attemptStart, AdvisoryLockException failed) {
    listeners.attempt(AttemptResult.ERROR, since(attemptStart), failed);
    if ((settings.failurePolicy() == FailurePolicy.EXIT || fatal(failed)) && !closing.get()) {
      throw failed;
    }
    LOG.warn("{} Could not start a term: {}", context, failed.getMessage());
    pause(settings.retryInterval());
    return null;
  }

  private Duration since(long startNanos) {
    return Duration.ofNanos(settings.time().nanoTime() - startNanos);
  }

  /** Waits on standby; false if the loop should stop. */
  private boolean pause(Duration d) {
    if (d.isZero()) {
      return !closing.get() && !Thread.currentThread().isInterrupted();
    }
    return wakeup.await(d.toNanos(), () -> false);
  }

  /**
   * Stops the loop. A running refresh is interrupted and awaited up to {@code closeTimeout}; then
   * listeners hear {@code onLost}; then the lock is released. A refresh that ignores the interrupt
   * past {@code closeTimeout} is logged at ERROR, naming its thread, and the lock is released
   * anyway. A waiting standby's session is aborted at once. Idempotent; never throws.
   */
  @Override
  public void close() {
    if (!closing.compareAndSet(false, true)) {
      return;
    }
    state.compareAndSet(State.NEW, State.CLOSED);
    wakeup.wakeAll();
    standby.close();
    LeaderTerm t = current;
    if (t != null) {
      t.end(LossReason.CLOSED, null);
      if (!t.awaitTask(settings.closeTimeout())) {
        Thread r = runner;
        LOG.error(
            "{} The refresh of term {} on thread {} ignored the interrupt for closeTimeout {};"
                + " releasing the lock anyway: make the task stop when interrupted",
            context,
            t.term().number(),
            r == null ? "?" : r.getName(),
            settings.closeTimeout());
        t.finish();
      }
    }
    Thread r = runner;
    if (r == null || r == Thread.currentThread()) {
      return;
    }
    try {
      if (!finished.await(settings.closeTimeout().toMillis(), TimeUnit.MILLISECONDS)) {
        LOG.warn(
            "{} run() has not returned within {} of close()", context, settings.closeTimeout());
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Test seam: the validated settings. */
  LoopSettings settingsForTests() {
    return settings;
  }

  @Override
  public String toString() {
    return "LeaderLoop" + context + "{" + state.get() + (isLeader() ? ", leader" : "") + "}";
  }
}
