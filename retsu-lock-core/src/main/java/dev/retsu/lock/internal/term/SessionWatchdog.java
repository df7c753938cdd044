package dev.retsu.lock.internal.term;

import dev.retsu.lock.LossReason;
import dev.retsu.lock.internal.TimeSource;
import dev.retsu.lock.internal.session.Proofs;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;

/**
 * The thread that watches a recipe's sessions ({@code retsu-lock-watchdog-<name>}, daemon; one per
 * loop or group, started with it, stopped on close). For each session it self-fences when the
 * deadline passes, ends a refresh that runs past {@code refreshTimeout} (and the session, when the
 * refresh ignores its interrupt for {@code closeTimeout} more), and keeps a healthy long refresh
 * from being fenced: while a refresh runs but is not using the session (work outside the database),
 * it runs the due heartbeat or ownership proof on the session itself, and reads the socket once
 * every {@link SessionWorker#IDLE_SLICE_MILLIS} ms that nothing else read it, for a bare EOF or
 * reset (what {@code ensureLeader()} does not read for). Thread-safe.
 */
public final class SessionWatchdog implements Runnable {

  private static final long SIMULATED_POLL_NANOS = 10_000_000L;
  private static final long MIN_PARK_NANOS = 1_000_000L;
  private static final long EOF_READ_NANOS = SessionWorker.IDLE_SLICE_MILLIS * 1_000_000L;

  private final TimeSource time;
  private final List<SessionWorker> watched = new CopyOnWriteArrayList<>();
  private final Thread thread;
  private volatile boolean stopped;

  /**
   * A watchdog whose thread starts with {@link #begin()}.
   *
   * @param time the clock
   * @param name what its thread is named after (the candidate, or the group)
   */
  public SessionWatchdog(TimeSource time, String name) {
    this.time = time;
    this.thread = new Thread(this, "retsu-lock-watchdog-" + name);
    thread.setDaemon(true);
  }

  /**
   * Starts a watchdog.
   *
   * @param time the clock
   * @param name what its thread is named after (the candidate, or the group)
   * @return the running watchdog
   */
  public static SessionWatchdog start(TimeSource time, String name) {
    SessionWatchdog w = new SessionWatchdog(time, name);
    w.begin();
    return w;
  }

  /** Starts the thread. */
  public void begin() {
    thread.start();
  }

  /** Watches a worker's session from now on, until it is finished. */
  public void watch(SessionWorker worker) {
    worker.watchedBy(this);
    watched.add(worker);
    wake();
  }

  /** Wakes the watchdog so it reads the deadlines again. */
  void wake() {
    LockSupport.unpark(thread);
  }

  /** Stops the thread. Idempotent. */
  public void stop() {
    stopped = true;
    thread.interrupt();
  }

  @Override
  public void run() {
    while (!stopped) {
      long next = Long.MAX_VALUE;
      for (SessionWorker w : watched) {
        if (w.finishedAndIdle()) {
          // Finished: not before, so that a listener's onLost before the release is still watched.
          watched.remove(w);
        } else {
          next = Math.min(next, check(w));
        }
      }
      long wait = next == Long.MAX_VALUE ? 1_000_000_000L : next - time.nanoTime();
      wait = Math.max(wait, MIN_PARK_NANOS);
      time.park(time.simulated() ? Math.min(wait, SIMULATED_POLL_NANOS) : wait);
      Thread.interrupted(); // only stop() interrupts; stopped says whether to go on
    }
  }

  /** One session's duties now; returns when they are next due (monotonic). */
  private long check(SessionWorker w) {
    Proofs proofs = w.session().proofs();
    if (!w.session().isOpen()) {
      return Long.MAX_VALUE; // released already (a timed-out refresh may still be running)
    }
    if (w.endReason() == null && proofs.fence().expired()) {
      w.selfFence();
      return Long.MAX_VALUE;
    }
    long now = time.nanoTime();
    long next = proofs.fence().deadline();
    if (w.tellingBeforeRelease()) {
      return whileTelling(w, now);
    }
    TermState t = w.running();
    long deadline = w.taskDeadline();
    if (t == null || deadline == Long.MAX_VALUE) {
      return next;
    }
    long closeTimeout = w.options().closeTimeout().toNanos();
    if (now - deadline >= 0 && !t.ended()) {
      w.refreshTimedOut(t);
    } else if (now - deadline - closeTimeout >= 0 && w.running() == t) {
      w.endSession(
          LossReason.SELF_FENCED,
          new TimeoutException(
              "A refresh ignored its interrupt for closeTimeout " + w.options().closeTimeout()),
          true);
      return Long.MAX_VALUE;
    } else if (now - proofs.nextHeartbeat() >= 0 || proofs.ownershipDue()) {
      proveWhileTaskIdle(w);
      now = time.nanoTime();
      next = Math.min(next, now + w.options().heartbeatInterval().toNanos() / 4);
    } else if (!time.simulated()) {
      w.readIfUnread(); // a bare EOF or reset, while the task works outside the session
      now = time.nanoTime();
      next = Math.min(next, now + EOF_READ_NANOS);
    }
    next = Math.min(next, Math.max(proofs.nextHeartbeat(), now + MIN_PARK_NANOS));
    return Math.min(next, now - deadline < 0 ? deadline : deadline + closeTimeout);
  }

  /**
   * A term ended on purpose (a close, a yield, a hand-over, a group's yield or rebalance) and its
   * session still holds the key, and a listener is in its {@code onLost} before the release: a
   * framework awaiting work that ignored its interrupt. The session is kept proven, so the lock
   * stays held (no self-fence, no idle bound of the server) until the listener returns, for at most
   * {@code closeTimeout}, the bound of a close; then the session is aborted under the listener,
   * with an ERROR, so a listener that hangs cannot hold the key forever.
   */
  private long whileTelling(SessionWorker w, long now) {
    Proofs proofs = w.session().proofs();
    long closeTimeout = w.options().closeTimeout().toNanos();
    long since = w.tellingSince();
    if (now - since - closeTimeout >= 0) {
      w.abortIfAListenerHangs();
      return Long.MAX_VALUE;
    }
    if (now - proofs.nextHeartbeat() >= 0 || proofs.ownershipDue()) {
      proveWhileListening(w);
      now = time.nanoTime();
    }
    long next = Math.min(proofs.fence().deadline(), since + closeTimeout);
    return Math.min(next, Math.max(proofs.nextHeartbeat(), now + MIN_PARK_NANOS));
  }

  /**
   * A heartbeat while a listener is in {@code onLost}; skipped if another thread uses the session.
   */
  private static void proveWhileListening(SessionWorker w) {
    if (!w.session().io().tryLockIo()) {
      return;
    }
    try {
      if (w.session().isOpen() && w.session().io().canProveNow()) {
        w.prove();
      }
    } finally {
      w.session().io().unlockIo();
    }
  }

  /** A heartbeat while the refresh works outside the database; skipped if it uses the session. */
  private static void proveWhileTaskIdle(SessionWorker w) {
    if (!w.session().io().tryLockIo()) {
      return; // the refresh is using the session, or a thread waits for it: their round trip
    }
    try {
      if (w.endReason() == null && w.session().io().canProveNow()) {
        w.prove();
      }
    } finally {
      w.session().io().unlockIo();
    }
  }
}
