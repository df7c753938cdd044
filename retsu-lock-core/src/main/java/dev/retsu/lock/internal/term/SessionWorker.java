package dev.retsu.lock.internal.term;

import dev.retsu.lock.LeaderTask;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import dev.retsu.lock.internal.TimeSource;
import dev.retsu.lock.internal.session.PgSession;
import dev.retsu.lock.internal.session.Proofs;
import dev.retsu.lock.internal.session.Session;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
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
 * <p>How one refresh runs is {@link TermRefresh}'s; how terms end is {@link TermEnd}'s; the
 * watchdog's duties are {@link SessionWatchdog}'s. The only difference between the recipes is the
 * {@link ReleasePolicy}. Thread-safe: {@link #run} on one thread; everything else from any.
 */
public final class SessionWorker extends TermRefresh {

  private static final Logger LOG = LoggerFactory.getLogger(SessionWorker.class);

  /** One idle slice: a read on the socket, then a wait on the wakeup for the rest. */
  public static final int IDLE_SLICE_MILLIS = 10;

  static final long SLICE_NANOS = IDLE_SLICE_MILLIS * 1_000_000L;

  /**
   * The read on the socket at the start of each idle slice, the only part of the slice that holds
   * the session: a close, a yield or a thread that wants the session waits at most this, not a
   * whole slice. A FATAL, a notification or a bare EOF that arrives during it ends the wait at
   * once. Later in the slice, a FATAL on a plain TCP socket is seen within {@link #WATCH_NANOS};
   * anything else (and everything on an SSL socket) is read at the next slice's start.
   */
  static final int IDLE_READ_MILLIS = 1;

  /** How often the rest of an idle slice looks at the socket's pending bytes, where it can. */
  static final long WATCH_NANOS = 1_000_000L;

  private final ConcurrentLinkedQueue<Runnable> jobs = new ConcurrentLinkedQueue<>();
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
    super(new Parts(session, options, listeners, policy, owner, closing));
    this.wakeup = new Wakeup(options.time(), closing);
    session.listen(this);
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
    return thread;
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

  /** Finishes the terms that ended, now; on the worker's thread only (from a job). */
  public void finishNow() {
    finishEnded();
  }

  /** Runs {@code job} on the worker's thread, between refreshes. */
  public void post(Runnable job) {
    jobs.add(job);
    wake();
  }

  @Override
  void wake() {
    wakeup.wakeAll();
  }

  /**
   * Runs the session's schedule on the calling thread until the session ended and its terms are
   * finished (listeners told, keys released).
   *
   * @param task the work of one key's refresh
   */
  public void run(LeaderTask task) {
    thread = Thread.currentThread();
    try {
      while (true) {
        if (closing.getAsBoolean() || interruptedByCaller()) {
          endSession(LossReason.CLOSED, null, false); // an interrupt from the caller: a stop
        }
        if (endReason() != null) {
          if (!finishSession(false)) {
            awaitOtherFinisher(); // a close finishing on its own thread: bound its listeners
          }
          return;
        }
        if (!session.isOpen() || (policy == ReleasePolicy.END_SESSION && terms.isEmpty())) {
          return; // its one term is finished or being finished: awaitDone() waits for that
        }
        runJobs();
        refreshDue(task);
        finishEnded();
        if (endReason() == null && session.isOpen()) {
          maintain();
          idle();
        }
      }
    } catch (RuntimeException | Error e) {
      // A bug of ours: end the session (its terms end, its keys are released) rather than leave
      // keys held by a session nobody serves.
      LOG.error("{} Session worker failed; ending its session", session.id().context(), e);
      endSession(LossReason.SESSION_LOST, e, false);
      finishSession(false);
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
      inJob = true; // before the check: see TermFinish.inJob
      try {
        Runnable j;
        if (endReason() != null || (j = jobs.poll()) == null) {
          return; // jobs left are skipped when run() ends
        }
        j.run();
      } finally {
        inJob = false;
      }
    }
  }

  /** The heartbeat: a proof when one is due, after the deadline check. */
  private void maintain() {
    if (session.proofs().fence().expired()) {
      selfFence();
      return;
    }
    long now = options.time().nanoTime();
    if (now - session.proofs().nextHeartbeat() >= 0 || session.proofs().ownershipDue()) {
      prove();
    }
  }

  /**
   * Waits until the next refresh or heartbeat, a job, or one slice, whichever comes first: first up
   * to {@link #IDLE_READ_MILLIS} on the session's socket when it can (what the server sent ends the
   * terms then), then on the wakeup, which a close, a yield or a job interrupts at once. The socket
   * read holds the session's I/O lock, so it is kept short: a close releases the lock without
   * waiting out a slice.
   */
  private void idle() {
    TimeSource time = options.time();
    long now = time.nanoTime();
    long next = session.proofs().nextHeartbeat();
    for (TermState t : terms.values()) {
      next = Math.min(next, t.nextRefresh());
    }
    long wait = next - now;
    if (wait <= 0 || !jobs.isEmpty()) {
      return;
    }
    if (time.simulated()) {
      wakeup.await(wait, () -> !jobs.isEmpty() || endReason() != null); // no socket to yield
      clearOwnInterrupt();
      return;
    }
    long slice = Math.min(wait, SLICE_NANOS);
    boolean foreign = session.proofs().foreignUseWithin(Proofs.SHARED_FOR_NANOS);
    if (foreign) {
      readIfUnread(); // another thread works on the session: leave the socket to it
    } else {
      try {
        if (session.awaitEvent(IDLE_READ_MILLIS)) {
          return;
        }
      } catch (SQLException e) {
        endedWhileWaiting(e);
        return;
      }
    }
    waitOutSlice(now, slice, !foreign && session.countsPendingBytes());
    clearOwnInterrupt();
  }

  /**
   * The rest of an idle slice, on the wakeup. Where the socket counts its pending bytes, it looks
   * at them every {@link #WATCH_NANOS} without holding the session, so a FATAL that arrives after
   * the slice's read (a terminate, a shutdown) ends the terms within that, not at the next slice.
   */
  private void waitOutSlice(long start, long slice, boolean watch) {
    TimeSource time = options.time();
    long rest = slice - (time.nanoTime() - start);
    while (rest > 0) {
      long step = watch ? Math.min(rest, WATCH_NANOS) : rest;
      if (!wakeup.await(step, () -> !jobs.isEmpty() || endReason() != null)
          || !jobs.isEmpty()
          || endReason() != null) {
        return;
      }
      if (watch) {
        PgSession.Evidence seen = session.probe(0, false); // null: a thread is using the session
        if (seen == PgSession.Evidence.ENDED) {
          readEnd();
          return;
        }
        watch = seen != PgSession.Evidence.PENDING; // a notice: the next slice's read takes it
      }
      rest = slice - (time.nanoTime() - start);
    }
  }

  /** Reads the end the watch saw, so the terms end with the server's own error as the cause. */
  private void readEnd() {
    try {
      if (!session.awaitEvent(IDLE_READ_MILLIS) && endReason() == null && session.isOpen()) {
        evidence(PgSession.Evidence.ENDED); // it cannot be read here (a transaction is open)
      }
    } catch (SQLException e) {
      endedWhileWaiting(e);
    }
  }

  private void endedWhileWaiting(SQLException e) {
    if (endReason() == null) {
      LOG.debug("{} Session ended while waiting: {}", session.id().context(), e.toString());
      endSession(closing.getAsBoolean() ? LossReason.CLOSED : LossReason.SESSION_LOST, e, false);
    }
  }

  // ---- what the session reports (on the thread that saw it, its I/O lock held) ----

  @Override
  public void sessionEnded(LossReason reason, Throwable cause) {
    endSession(reason, cause, false);
  }

  @Override
  public void keysLost(Set<LockKey> keys) {
    for (LockKey k : keys) {
      TermState t = terms.get(k);
      if (t != null) {
        LOG.warn("{} {} is no longer held by its session (unlocked by user SQL?)", context(t), k);
        endTerm(
            t,
            LossReason.LOCK_NOT_HELD,
            new IllegalStateException(
                "Backend " + session.id().pid() + " is alive but no longer holds " + k));
      }
    }
  }
}
