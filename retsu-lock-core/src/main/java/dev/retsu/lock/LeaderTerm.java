package dev.retsu.lock;

import dev.retsu.lock.internal.PgSession;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One term: the acting-leader checks (invariant 5) and the order in which a term ends. A term ends
 * once, from any thread, and always in this order: it turns invalid at once (so {@link
 * #ensureLeader()} fails), the running refresh is interrupted and awaited, listeners hear {@code
 * onLost}, and only then is the lock released. Self-fencing differs in one step: the session is
 * aborted (the lock released) right after the term turns invalid, because the server could free the
 * lock soon anyway. Thread-safe.
 */
final class LeaderTerm implements LeaderContext, AdvisoryLockLease.Watcher {

  private static final Logger LOG = LoggerFactory.getLogger(LeaderTerm.class);

  final LoopSettings settings;
  final TermLease lease;
  final SelfFence fence;
  private final Term term;
  private final Listeners listeners;
  private final Thread runner;
  private final TimeSource time;
  private final AtomicBoolean ended = new AtomicBoolean();
  private final AtomicBoolean finishing = new AtomicBoolean();
  private final CountDownLatch finished = new CountDownLatch(1);
  private final CountDownLatch taskIdle = new CountDownLatch(1);
  private volatile LossReason reason;
  private volatile Throwable cause;
  private volatile boolean inTask;
  private volatile boolean unlockSuspected;
  volatile boolean interruptedByTerm;
  volatile long taskDeadline = Long.MAX_VALUE;
  volatile boolean announced;
  volatile boolean lostDelivered;

  LeaderTerm(
      Term term,
      TermLease lease,
      LoopSettings settings,
      Listeners listeners,
      Thread runner,
      long proofStartNanos,
      long proofStartWall) {
    this.term = term;
    this.lease = lease;
    this.settings = settings;
    this.listeners = listeners;
    this.runner = runner;
    this.time = settings.time();
    this.fence = new SelfFence(time, settings.selfFenceAfter(), proofStartNanos, proofStartWall);
    lease.watch(this);
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
    return !ended.get() && !fence.expired();
  }

  @Override
  public void ensureLeader() {
    checkLocally();
    if (unlockSuspected || !PgSession.canProbe()) {
      proveLeader();
      return;
    }
    // A call in progress on the session (the watchdog's heartbeat, or the task's own statement on
    // another thread) may be reading a FATAL right now: wait for it, but never past the deadline.
    PgSession.Evidence evidence = lease.probe(fence.nanosLeft());
    if (evidence == null) {
      // The session stayed busy until the deadline: no evidence can be had in time.
      fence(LossReason.SELF_FENCED, fence.timeout(settings.bounds()));
      throw lost();
    }
    if (evidence == PgSession.Evidence.ENDED) {
      end(
          LossReason.SESSION_LOST,
          new SQLException("The server ended the session (seen on its socket)", "08006"));
    } else if (evidence != PgSession.Evidence.QUIET) {
      proveLeader(); // something is pending that only a round trip can read
      return;
    }
    checkLocally();
  }

  @Override
  public void proveLeader() {
    checkLocally();
    long start = time.nanoTime();
    long left = TimeUnit.NANOSECONDS.toMillis(fence.nanosLeft());
    int timeout = (int) Math.max(1, Math.min(roundTripMillis(), left));
    try {
      lease.verify(timeout);
    } catch (LeadershipLostException e) {
      end(e.reason(), e);
      throw lost();
    } catch (AdvisoryLockException e) {
      // The check could not run on a live session: ownership unknown, so not proven.
      end(LossReason.SESSION_LOST, e);
      throw lost();
    }
    fence.proved(start);
    unlockSuspected = false;
    checkLocally();
  }

  private int roundTripMillis() {
    return (int) settings.lock().roundTripTimeout().toMillis();
  }

  /** Fails unless the term is live and inside its deadline; no I/O. */
  private void checkLocally() {
    if (!ended.get() && fence.expired()) {
      fence(LossReason.SELF_FENCED, fence.timeout(settings.bounds()));
    }
    if (ended.get()) {
      throw lost();
    }
  }

  private LeadershipLostException lost() {
    LossReason why = reason;
    return new LeadershipLostException(
        why != null ? why : LossReason.CLOSED,
        "Term " + term.number() + " is over",
        term.key(),
        term.candidateId(),
        cause);
  }

  boolean ended() {
    return ended.get();
  }

  LossReason reason() {
    return reason;
  }

  Throwable cause() {
    return cause;
  }

  boolean inTask() {
    return inTask;
  }

  // ---- what the lease reports (with its I/O lock held, on the calling thread) ----

  @Override
  public void roundTrip(long startNanos) {
    fence.proved(startNanos);
  }

  @Override
  public void sessionLost(SQLException e) {
    if (claim(LossReason.SESSION_LOST, e)) {
      interruptTaskFromElsewhere();
    }
  }

  @Override
  public void unlockSuspected() {
    unlockSuspected = true;
  }

  // ---- running a refresh (runner thread) ----

  /** Enters a refresh; false if the term ended meanwhile (then the task must not run). */
  boolean enterTask() {
    inTask = true;
    if (ended.get()) {
      inTask = false;
      return false;
    }
    taskDeadline = time.nanoTime() + settings.refreshTimeout().toNanos();
    return true;
  }

  void leaveTask() {
    taskDeadline = Long.MAX_VALUE;
    inTask = false;
    taskIdle.countDown();
    if (interruptedByTerm) {
      Thread.interrupted(); // our own interrupt, not a stop request from the caller
    }
  }

  /** After a refresh: the session back in autocommit, and ownership proven if user SQL unlocked. */
  void afterTask() {
    if (ended.get()) {
      return;
    }
    try {
      if (lease.restoreAutocommit()) {
        LOG.warn(
            "{} The refresh of term {} left autocommit off or a transaction open; rolled back what"
                + " was not committed and turned autocommit back on, so the session stays"
                + " observable between refreshes",
            settings.context(),
            term.number());
      }
      if (unlockSuspected) {
        proveLeader();
      }
    } catch (SQLException e) {
      end(
          Diagnostics.isSessionLost(e.getSQLState())
              ? LossReason.SESSION_LOST
              : LossReason.REFRESH_FAILED,
          e);
    } catch (LeadershipLostException e) {
      // ended by proveLeader
    }
  }

  // ---- ending ----

  /** Marks the term over; true for the one caller that wins. */
  private boolean claim(LossReason why, Throwable error) {
    if (!ended.compareAndSet(false, true)) {
      return false;
    }
    reason = why;
    cause = error;
    return true;
  }

  private void interruptTaskFromElsewhere() {
    if (inTask && Thread.currentThread() != runner) {
      interruptedByTerm = true;
      runner.interrupt();
    }
  }

  /**
   * Ends the term gracefully from any thread: invalid at once; a running refresh is interrupted and
   * finishes the end itself when it returns; otherwise listeners are told and the lock released
   * here.
   */
  void end(LossReason why, Throwable error) {
    if (!claim(why, error)) {
      return;
    }
    if (inTask) {
      interruptTaskFromElsewhere();
      return; // the runner finishes when the refresh returns, or close() after closeTimeout
    }
    finish();
  }

  /**
   * Self-fences from any thread (the watchdog, or a late check): invalid at once, the refresh
   * interrupted and not awaited, listeners told, and the session aborted (no socket write that
   * could block), well before the server could free the lock.
   */
  void fence(LossReason why, Throwable error) {
    if (!claim(why, error)) {
      return;
    }
    finishing.set(true); // this thread finishes; the runner only waits for it
    interruptTaskFromElsewhere();
    if (why == LossReason.REFRESH_TIMED_OUT) {
      listeners.refreshed(this, settings.refreshTimeout(), error);
    }
    tellAndRelease(true);
  }

  /** Tells listeners, then releases the lock; once, whoever calls first. */
  void finish() {
    if (finishing.compareAndSet(false, true)) {
      tellAndRelease(false);
    }
  }

  private void tellAndRelease(boolean abort) {
    try {
      LossReason why = reason;
      Duration held = Duration.between(term.start(), time.now());
      LOG.info(
          "{} Leadership {} ({}) after {}: term {}, token {}{}",
          settings.context(),
          why == LossReason.CLOSED ? "released" : "lost",
          why,
          held,
          term.number(),
          term.fencingToken(),
          cause == null ? "" : ": " + cause);
      listeners.lost(this, why, cause);
    } finally {
      try {
        if (abort) {
          lease.abort();
        } else {
          lease.close();
        }
      } finally {
        finished.countDown();
      }
    }
  }

  /**
   * Ends the term for {@code LeaderLoop.close()}, from any thread: a running refresh is interrupted
   * and awaited up to {@code closeTimeout}; one that ignores the interrupt past it is logged at
   * ERROR, naming its thread, and the lock is released anyway.
   */
  void close() {
    end(LossReason.CLOSED, null);
    if (!awaitTask(settings.closeTimeout())) {
      LOG.error(
          "{} The refresh of term {} on thread {} ignored the interrupt for closeTimeout {};"
              + " releasing the lock anyway: make the task stop when interrupted",
          settings.context(),
          term.number(),
          runner.getName(),
          settings.closeTimeout());
      finish();
    }
  }

  /** Waits up to {@code timeout} for a running refresh to return; true if none is running. */
  private boolean awaitTask(Duration timeout) {
    if (!inTask) {
      return true;
    }
    try {
      return taskIdle.await(timeout.toNanos(), TimeUnit.NANOSECONDS) || !inTask;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return !inTask;
    }
  }

  /** Waits up to {@code timeout} for whoever ends the term to finish; false if it did not. */
  boolean awaitFinished(Duration timeout) {
    boolean interrupted = false;
    try {
      while (true) {
        try {
          return finished.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  @Override
  public String toString() {
    return "LeaderTerm"
        + settings.context()
        + "{"
        + term.number()
        + (ended.get() ? ", ended" : "")
        + "}";
  }
}
