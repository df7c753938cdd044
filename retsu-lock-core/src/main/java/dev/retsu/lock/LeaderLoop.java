package dev.retsu.lock;

import dev.retsu.lock.internal.Checks;
import dev.retsu.lock.internal.Lifecycle;
import dev.retsu.lock.internal.loop.ContendLoop;
import dev.retsu.lock.internal.loop.LoopSettings;
import dev.retsu.lock.internal.loop.LoopTerm;
import dev.retsu.lock.internal.loop.Standby;
import dev.retsu.lock.internal.term.SessionWatchdog;
import dev.retsu.lock.internal.term.TermListeners;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
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
  private final TermListeners listeners;
  private final Standby standby;
  private final ContendLoop loop;
  private final Lifecycle lifecycle = new Lifecycle();
  private final CountDownLatch finished = new CountDownLatch(1);
  private volatile Thread runner;

  LeaderLoop(LoopSettings settings) {
    this(settings, new Standby(settings));
  }

  /** A loop on the given standby: unit tests pass one whose attempts return stub sessions. */
  LeaderLoop(LoopSettings settings, Standby standby) {
    this.settings = settings;
    this.context = settings.context();
    this.listeners = new TermListeners(settings.term().listeners(), context);
    this.standby = standby;
    this.loop = new ContendLoop(settings, listeners, standby);
  }

  /** The validated settings this loop runs with (tests in this package read them). */
  LoopSettings settings() {
    return settings;
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
    return settings.key();
  }

  /**
   * Returns this candidate's id.
   *
   * @return the id
   */
  public String candidateId() {
    return settings.candidateId();
  }

  /**
   * Returns what this loop's log lines and messages start with, {@code [lock=<key>,
   * candidate=<id>]}, for lines about the loop written elsewhere (a metrics binder's), so that one
   * search finds all of a candidate's lines.
   *
   * @return the prefix
   */
  public String logPrefix() {
    return context;
  }

  /**
   * Returns who holds the key right now (any candidate, or any session), with one query on a
   * borrowed connection: what {@link LeaderInfo#of(DataSource, LockKey)} reads, each round trip
   * bounded by the round-trip timeout.
   *
   * @return the holder, or empty if nobody holds it
   * @throws AdvisoryLockException if the query fails
   */
  public Optional<LeaderInfo> currentHolder() {
    return dev.retsu.lock.internal.watch.Holders.current(settings.spec()).map(LeaderInfo::of);
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
    return State.valueOf(lifecycle.phase().name());
  }

  /**
   * Returns what {@link #run} threw, once the loop is {@link State#FAILED}.
   *
   * @return the failure, or empty
   */
  public Optional<Throwable> failure() {
    return lifecycle.failure();
  }

  /**
   * Returns whether this candidate leads a term right now that has not ended or passed its
   * self-fencing deadline. A local hint; the task checks with {@link LeaderContext#ensureLeader()}.
   *
   * @return true while leading
   */
  public boolean isLeader() {
    LoopTerm t = loop.current();
    return t != null && t.state().isHeld() && t.state().isLeader();
  }

  /**
   * Returns whether this candidate is a {@link TakeoverMode#WAIT} standby queued on the lock right
   * now: its waiting session is blocked behind the session that holds the key, and is granted the
   * key the moment that session lets it go. A local hint without I/O, for health checks: a WAIT
   * standby hears of an attempt ({@link LeaderListener#onAttempt}) only when a wait ends, after up
   * to {@code waitTimeout}. Always false in POLL, which holds no session between attempts.
   *
   * @return true while a WAIT standby's wait is in progress
   */
  public boolean isWaiting() {
    return standby.isWaiting() && loop.current() == null;
  }

  /**
   * Returns the current term, while leading.
   *
   * @return the term, or empty when not leading
   */
  public Optional<Term> currentTerm() {
    LoopTerm t = loop.current();
    return t == null || !t.state().isHeld() ? Optional.empty() : Optional.of(t.state().term());
  }

  /**
   * Returns this candidate's own term as a {@link LeaderInfo}, while it leads: its backend pid and
   * database, when the term started, the start of the last round trip that proved its session alive
   * ({@code lastRenewal}), its self-fencing deadline ({@code validUntil}: it stops acting by then
   * unless a round trip succeeds), the term's number and its fencing token. No I/O.
   *
   * @return the info, or empty when not leading (also during a {@code takeoverDelay})
   */
  public Optional<LeaderInfo> leaderInfo() {
    LoopTerm t = loop.current();
    if (t == null || !t.state().isHeld()) {
      return Optional.empty();
    }
    return Optional.of(LeaderInfo.ofTerm(t.state().term(), t.session()));
  }

  /**
   * Hands leadership over: when this candidate leads, its term ends in the graceful order (the
   * running refresh interrupted and awaited, {@code onLost} with {@link LossReason#YIELDED}, a
   * {@code released} notice, then the release), and the loop does not contend again for {@code
   * cooldown}; it stays a candidate. A WAIT standby elsewhere is granted the key the moment it is
   * released. Returns once the lock is released (within {@code closeTimeout}), or at once when
   * called from the task itself, which should then return.
   *
   * @param cooldown how long not to contend: zero or positive
   * @return true if this call ended a term; false when not leading
   */
  public boolean yield(Duration cooldown) {
    Checks.nonNegative("cooldown", cooldown);
    return loop.yield(cooldown);
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
    lifecycle.start("A LeaderLoop runs once", context);
    runner = Thread.currentThread();
    LOG.info("{} Leader loop started ({})", context, settings.summary());
    SessionWatchdog watchdog = SessionWatchdog.start(settings.term().time(), candidateId());
    LeaderWatch.Registration watching =
        settings.term().watch() == null
            ? null
            : settings.term().watch().watch(key(), listeners::leaderChanged);
    try {
      loop.contend(task, watchdog);
      lifecycle.close();
    } catch (RuntimeException | Error e) {
      lifecycle.fail(e);
      LOG.error("{} Leader loop failed; this candidate no longer contends", context, e);
      throw e;
    } finally {
      if (watching != null) {
        watching.close();
      }
      watchdog.stop();
      standby.close();
      runner = null;
      finished.countDown();
      LOG.info("{} Leader loop stopped", context);
    }
  }

  /**
   * Stops the loop. A running refresh is interrupted and awaited up to {@code closeTimeout}; then
   * listeners hear {@code onLost}; then the lock is released. A refresh that ignores the interrupt
   * past {@code closeTimeout} is logged at ERROR, naming its thread, and the lock is released
   * anyway. A waiting standby's session is aborted at once. Idempotent; never throws.
   */
  @Override
  public void close() {
    if (!loop.markClosing()) {
      return;
    }
    if (lifecycle.phase() == Lifecycle.Phase.NEW) {
      lifecycle.close();
    }
    loop.stop();
    Thread r = runner;
    if (r == null || r == Thread.currentThread()) {
      return;
    }
    try {
      if (!finished.await(settings.term().closeTimeout().toMillis(), TimeUnit.MILLISECONDS)) {
        LOG.warn(
            "{} run() has not returned within {} of close()",
            context,
            settings.term().closeTimeout());
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public String toString() {
    return "LeaderLoop" + context + "{" + state() + (isLeader() ? ", leader" : "") + "}";
  }
}
