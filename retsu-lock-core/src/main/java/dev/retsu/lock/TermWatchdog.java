package dev.retsu.lock;

import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The thread that watches one term ({@code retsu-lock-watchdog-<candidate>}, daemon, ends with the
 * term). It self-fences when the deadline passes, ends a refresh that runs past {@code
 * refreshTimeout}, and keeps a healthy long refresh from being fenced: while the refresh runs but
 * is not using the session (non-database work), it proves ownership on the session itself every
 * {@code heartbeatInterval}. Thread-safe.
 */
final class TermWatchdog implements Runnable {

  private static final Logger LOG = LoggerFactory.getLogger(TermWatchdog.class);
  private static final long SIMULATED_POLL_NANOS = 10_000_000L;

  private final LeaderTerm term;
  private final TimeSource time;
  private volatile Thread thread;

  TermWatchdog(LeaderTerm term) {
    this.term = term;
    this.time = term.settings.time();
  }

  static TermWatchdog start(LeaderTerm term, String candidateId) {
    TermWatchdog w = new TermWatchdog(term);
    Thread t = new Thread(w, "retsu-lock-watchdog-" + candidateId);
    t.setDaemon(true);
    w.thread = t;
    t.start();
    return w;
  }

  /** Wakes the watchdog so it reads the deadlines again. */
  void wake() {
    Thread t = thread;
    if (t != null) {
      LockSupport.unpark(t);
    }
  }

  void stop() {
    Thread t = thread;
    if (t != null) {
      t.interrupt();
    }
  }

  @Override
  public void run() {
    long heartbeat = term.settings.heartbeatInterval().toNanos();
    while (!term.ended() && !Thread.currentThread().isInterrupted()) {
      long now = time.nanoTime();
      if (term.fence.expired()) {
        term.fence(LossReason.SELF_FENCED, term.fence.timeout(term.settings.bounds()));
        return;
      }
      long taskDeadline = term.taskDeadline;
      if (taskDeadline != Long.MAX_VALUE && now - taskDeadline >= 0) {
        term.fence(
            LossReason.REFRESH_TIMED_OUT,
            new TimeoutException(
                "The refresh ran longer than refreshTimeout " + term.settings.refreshTimeout()));
        return;
      }
      long nextProof = term.fence.lastProofStart() + heartbeat;
      if (term.inTask() && now - nextProof >= 0) {
        proveWhileTaskIdle();
        now = time.nanoTime();
        nextProof = Math.max(term.fence.lastProofStart() + heartbeat, now + heartbeat / 4);
      }
      long next = Math.min(term.fence.nanosLeft(), nextProof - now);
      if (taskDeadline != Long.MAX_VALUE) {
        next = Math.min(next, taskDeadline - now);
      }
      next = Math.max(next, 1_000_000L);
      time.park(time.simulated() ? Math.min(next, SIMULATED_POLL_NANOS) : next);
    }
  }

  /** A heartbeat on the session while the refresh does other work; skipped if it is busy. */
  private void proveWhileTaskIdle() {
    if (!term.lease.tryLockIo()) {
      return; // the refresh is using the session: its own round trip will prove it
    }
    try {
      if (term.ended() || !term.lease.canProveNow()) {
        return;
      }
      term.proveLeader();
    } catch (AdvisoryLockException e) {
      LOG.debug("{} Heartbeat during a refresh: {}", term.settings.context(), e.getMessage());
    } finally {
      term.lease.unlockIo();
    }
  }
}
