package dev.retsu.lock.internal.term;

import dev.retsu.lock.LeaderTask;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import dev.retsu.lock.internal.session.Session;
import dev.retsu.lock.internal.session.SessionIo;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The schedule on one session, for every recipe: its terms' refreshes (the task runs on the
 * worker's thread, one at a time), heartbeats and ownership proofs, the recipe's jobs, and the idle
 * wait on the session's socket, in slices that yield the session at once to a thread queued for it.
 * Between refreshes a terminated session or a stopped server ends its terms within milliseconds,
 * because the wait is a read on the session's own socket; while user code on another thread uses
 * the session, the worker leaves the socket to it and reads it once per slice instead.
 *
 * <p>The worker is its parts, each owning its state: how one refresh runs is {@link TermRefresh}'s;
 * the idle wait is {@link IdleWait}'s; how terms end (claim, interrupt, await, {@code onLost}, the
 * release) is {@link TermEnd}'s; the thread and the refresh running on it are {@link
 * RunningTask}'s. The watchdog's duties are {@link SessionWatchdog}'s, which asks this worker
 * through its methods. The only difference between the recipes is the {@link ReleasePolicy}.
 * Thread-safe: {@link #run} on one thread; everything else from any.
 */
public final class SessionWorker {

  private static final Logger LOG = LoggerFactory.getLogger(SessionWorker.class);

  /** One idle slice: a read on the socket, then a wait on the wakeup for the rest. */
  public static final int IDLE_SLICE_MILLIS = 10;

  /** What the recipe hears from a worker. */
  public interface Owner {
    /** Hears nothing. */
    Owner NONE = new Owner() {};

    /**
     * A term of the session was finished: listeners told, its key released or its session ended.
     */
    default void termEnded(TermState t) {}

    /** The session ended and every term on it was finished. */
    default void sessionFinished(LossReason reason, Throwable cause) {}
  }

  private final Session session;
  private final TermOptions options;
  private final TermListeners listeners;
  private final ReleasePolicy policy;
  private final BooleanSupplier closing;
  private final Map<LockKey, TermState> terms = new ConcurrentHashMap<>();
  private final ConcurrentLinkedQueue<Runnable> jobs = new ConcurrentLinkedQueue<>();
  private final RunningTask task = new RunningTask();
  private final TermEnd ends;
  private final TermRefresh refreshes;
  private final IdleWait idle;
  private final Wakeup wakeup;

  /**
   * A worker for one session.
   *
   * @param session the session, holding nothing or its first keys
   * @param options the terms' options
   * @param listeners who hears the terms
   * @param policy how a term's key is released
   * @param owner what the recipe hears
   * @param closing whether the recipe is closing
   */
  public SessionWorker(
      Session session,
      TermOptions options,
      TermListeners listeners,
      ReleasePolicy policy,
      Owner owner,
      BooleanSupplier closing) {
    this.session = session;
    this.options = options;
    this.listeners = listeners;
    this.policy = policy;
    this.closing = closing;
    this.wakeup = new Wakeup(options.time(), closing);
    WorkerParts parts =
        new WorkerParts(session, options, listeners, policy, owner, closing, terms, task, wakeup);
    this.ends = new TermEnd(parts);
    this.refreshes = new TermRefresh(parts, ends);
    this.idle = new IdleWait(parts, ends, jobs);
    session.io().listen(ends); // what the session finds ends terms
  }

  /**
   * Starts a term of a key this session holds; it is announced with {@link #announce}.
   *
   * @param term the term, its token taken on this session
   * @return its state
   */
  public TermState begin(Term term) {
    TermState t = new TermState(term, session, this);
    t.nextRefreshAt(options.time().nanoTime());
    terms.put(term.key(), t);
    return t;
  }

  /**
   * Defers a term's first refresh, and its announcement, by {@code delay} (a loop's lock-delay);
   * its session is proven meanwhile as usual.
   *
   * @param t the term, begun on this worker
   * @param delay how long
   */
  public void delayFirstRefresh(TermState t, Duration delay) {
    t.nextRefreshAt(options.time().nanoTime() + delay.toNanos());
    t.deferAnnouncement();
  }

  /** The thread running the schedule, or null before it runs. */
  public Thread thread() {
    return task.thread();
  }

  /**
   * Delivers {@code onAcquired}, unless the term ended meanwhile or its session is already past its
   * self-fencing deadline (a grant whose answer arrived late, a pause since): the first refresh
   * then fences it before any work, and nobody hears of it.
   */
  public void announce(TermState t) {
    if (session.proofs().fence().expired()) {
      return;
    }
    listeners.acquired(t);
  }

  /** The live terms of this session. */
  public Map<LockKey, TermState> terms() {
    return terms;
  }

  /** The session. */
  public Session session() {
    return session;
  }

  /** Whether the session has ended (its terms then end too). */
  public boolean ended() {
    return ends.ended();
  }

  /** Finishes the terms that ended, now; on the worker's thread only (from a job). */
  public void finishNow() {
    ends.finishEnded();
  }

  /** Runs {@code job} on the worker's thread, between refreshes. */
  public void post(Runnable job) {
    jobs.add(job);
    wakeup.wakeAll();
  }

  /**
   * Runs the session's schedule on the calling thread until the session ended and its terms are
   * finished (listeners told, keys released).
   *
   * @param task the work of one key's refresh
   */
  public void run(LeaderTask task) {
    this.task.bindToCurrentThread();
    try {
      while (true) {
        if (closing.getAsBoolean() || this.task.interruptedByCaller()) {
          ends.endSession(LossReason.CLOSED, null, false); // an interrupt from the caller: a stop
        }
        if (ends.endReason() != null) {
          if (!ends.finishSession(false)) {
            ends.awaitOtherFinisher(); // a close finishing on its own thread: bound its listeners
          }
          return;
        }
        if (!session.isOpen() || (policy == ReleasePolicy.END_SESSION && terms.isEmpty())) {
          return; // its one term is finished or being finished: awaitDone() waits for that
        }
        runJobs();
        refreshes.refreshDue(task);
        ends.finishEnded();
        if (ends.endReason() == null && session.isOpen()) {
          maintain();
          idle.idle(nextDue());
        }
      }
    } catch (RuntimeException | Error e) {
      // A bug of ours: end the session (its terms end, its keys are released) rather than leave
      // keys held by a session nobody serves.
      LOG.error("{} Session worker failed; ending its session", session.id().context(), e);
      ends.endSession(LossReason.SESSION_LOST, e, false);
      ends.finishSession(false);
      throw e;
    } finally {
      Runnable j;
      while ((j = jobs.poll()) != null) {
        if (j instanceof Job job) {
          job.skip();
        }
      }
    }
  }

  /** A job with an answer: skipped (answered empty) when the session is gone. */
  public abstract static class Job implements Runnable {
    /** Answers the job without running it. */
    public abstract void skip();
  }

  private void runJobs() {
    while (!jobs.isEmpty()) {
      task.inJob(true); // before the check: see RunningTask.inJob
      try {
        Runnable j;
        if (ends.endReason() != null || (j = jobs.poll()) == null) {
          return; // jobs left are skipped when run() ends
        }
        j.run();
      } finally {
        task.inJob(false);
      }
    }
  }

  /** The heartbeat: a proof when one is due, after the deadline check. */
  private void maintain() {
    if (session.proofs().fence().expired()) {
      ends.selfFence();
      return;
    }
    long now = options.time().nanoTime();
    if (now - session.proofs().nextHeartbeat() >= 0 || session.proofs().ownershipDue()) {
      ends.prove();
    }
  }

  /** When the next refresh or heartbeat is due (monotonic). */
  private long nextDue() {
    long next = session.proofs().nextHeartbeat();
    for (TermState t : terms.values()) {
      next = Math.min(next, t.nextRefresh());
    }
    return next;
  }

  // ---- how terms end, from any thread (see TermEnd) ----

  /** Ends one term from any thread: invalid at once, its refresh interrupted, then finished. */
  public void endTerm(TermState t, LossReason why, Throwable error) {
    ends.endTerm(t, why, error);
  }

  /** Ends the session and every term on it, from any thread; aborted here with {@code abortNow}. */
  public void endSession(LossReason why, Throwable error, boolean abortNow) {
    ends.endSession(why, error, abortNow);
  }

  /** Self-fences: no proof that the session is alive before its deadline. */
  public void selfFence() {
    ends.selfFence();
  }

  /** Ends the session for a close, from any thread, within {@code closeTimeout} (see TermEnd). */
  public void close() {
    ends.close();
  }

  /**
   * Ends the session and finishes its terms on the calling thread, for a worker that never ran (a
   * loop closed between the grant and the announcement).
   */
  public void endNow() {
    ends.endNow(LossReason.CLOSED);
  }

  /** {@link #endNow()} for {@code why}. */
  public void endNow(LossReason why) {
    ends.endNow(why);
  }

  /** Waits up to {@code timeout} for the session to be finished; true if it is. */
  public boolean awaitDone(Duration timeout) {
    return ends.awaitDone(timeout);
  }

  /** Acts on what a probe of the session's socket found (a term's {@code ensureLeader}). */
  void evidence(SessionIo.Evidence found) {
    ends.evidence(found);
  }

  // ---- what the watchdog asks (see SessionWatchdog; each as TermEnd, RunningTask or IdleWait)
  // ----

  /** Watched by {@code w} from now on: the worker wakes it when a refresh starts or ends. */
  void watchedBy(SessionWatchdog w) {
    task.watchedBy(w);
  }

  /** Whether the session is ended and finished, with no refresh running: nothing left to watch. */
  boolean finishedAndIdle() {
    return ends.ended() && task.running() == null && ends.done();
  }

  LossReason endReason() {
    return ends.endReason(); // null while the session lives
  }

  /**
   * Whether a listener is in {@code onLost} before the session's release: a term ended on purpose
   * while the session lives, or the session ends in a way that releases gracefully.
   */
  boolean tellingBeforeRelease() {
    LossReason ending = ends.endReason();
    return ends.telling() != null && (ending == null || policy.unlocks(ending));
  }

  long tellingSince() {
    return ends.tellingSince();
  }

  TermState running() {
    return task.running();
  }

  long taskDeadline() {
    return task.deadline(); // monotonic; Long.MAX_VALUE while no refresh runs
  }

  TermOptions options() {
    return options;
  }

  void refreshTimedOut(TermState t) {
    ends.refreshTimedOut(t);
  }

  void abortIfAListenerHangs() {
    ends.abortIfAListenerHangs();
  }

  void readIfUnread() {
    idle.readIfUnread();
  }

  void prove() {
    ends.prove();
  }
}
