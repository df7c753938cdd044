package dev.retsu.lock.internal.term;

import dev.retsu.lock.LossReason;
import dev.retsu.lock.internal.TimeSource;
import dev.retsu.lock.internal.session.Proofs;
import dev.retsu.lock.internal.session.Session;
import dev.retsu.lock.internal.session.SessionIo;
import java.sql.SQLException;
import java.util.Queue;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker's wait between refreshes, heartbeats and jobs: slices of {@link
 * SessionWorker#IDLE_SLICE_MILLIS}, each a short read on the session's socket (what the server sent
 * ends the terms then), then a wait on the wakeup, which a close, a yield or a job cuts short; on a
 * plain TCP socket that wait watches the pending bytes, so a FATAL that arrives after the read ends
 * the terms within a millisecond. While user code on another thread uses the session, it leaves the
 * socket to that thread and reads it once per slice that nothing else read it. Thread-safe as
 * {@link SessionWorker}: {@link #idle} runs on the worker's thread, {@link #readIfUnread} also on
 * the watchdog's.
 */
final class IdleWait {

  /** The worker's logger: these lines are the worker's, as they always were. */
  private static final Logger LOG = LoggerFactory.getLogger(SessionWorker.class);

  static final long SLICE_NANOS = SessionWorker.IDLE_SLICE_MILLIS * 1_000_000L;

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

  private final Session session;
  private final SessionIo io;
  private final TimeSource time;
  private final BooleanSupplier closing;
  private final Wakeup wakeup;
  private final RunningTask task;
  private final TermEnd ends;

  private final Queue<Runnable> jobs;

  /** Whether the wait is over before its time: a job is queued or the session ended. */
  private final CutShort cutShort = new CutShort();

  IdleWait(WorkerParts parts, TermEnd ends, Queue<Runnable> jobs) {
    this.session = parts.session();
    this.io = session.io();
    this.time = parts.options().time();
    this.closing = parts.closing();
    this.wakeup = parts.wakeup();
    this.task = parts.task();
    this.ends = ends;
    this.jobs = jobs;
  }

  /**
   * Waits until {@code next} (monotonic), a job, or one slice, whichever comes first: first up to
   * {@link #IDLE_READ_MILLIS} on the session's socket when it can (what the server sent ends the
   * terms then), then on the wakeup, which a close, a yield or a job interrupts at once. The socket
   * read holds the session's I/O lock, so it is kept short: a close releases the lock without
   * waiting out a slice.
   */
  void idle(long next) {
    long now = time.nanoTime();
    long wait = next - now;
    if (wait <= 0 || !jobs.isEmpty()) {
      return;
    }
    if (time.simulated()) {
      wakeup.await(wait, cutShort); // no socket to yield
      task.clearOwnInterrupt();
      return;
    }
    long slice = Math.min(wait, SLICE_NANOS);
    boolean foreign = session.proofs().foreignUseWithin(Proofs.SHARED_FOR_NANOS);
    if (foreign) {
      readIfUnread(); // another thread works on the session: leave the socket to it
    } else {
      try {
        if (io.awaitEvent(IDLE_READ_MILLIS)) {
          return;
        }
      } catch (SQLException e) {
        endedWhileWaiting(e);
        return;
      }
    }
    waitOutSlice(now, slice, !foreign && io.countsPendingBytes());
    task.clearOwnInterrupt();
  }

  /**
   * The rest of an idle slice, on the wakeup. Where the socket counts its pending bytes, it looks
   * at them every {@link #WATCH_NANOS} without holding the session, so a FATAL that arrives after
   * the slice's read (a terminate, a shutdown) ends the terms within that, not at the next slice.
   */
  private void waitOutSlice(long start, long slice, boolean watch) {
    long rest = slice - (time.nanoTime() - start);
    while (rest > 0) {
      long step = watch ? Math.min(rest, WATCH_NANOS) : rest;
      if (!wakeup.await(step, cutShort) || cutShort.getAsBoolean()) {
        return;
      }
      if (watch) {
        SessionIo.Evidence seen = io.probe(0, false); // null: a thread is using the session
        if (seen == SessionIo.Evidence.ENDED) {
          readEnd();
          return;
        }
        watch = seen != SessionIo.Evidence.PENDING; // a notice: the next slice's read takes it
      }
      rest = slice - (time.nanoTime() - start);
    }
  }

  /** Reads the end the watch saw, so the terms end with the server's own error as the cause. */
  private void readEnd() {
    try {
      if (!io.awaitEvent(IDLE_READ_MILLIS) && ends.endReason() == null && session.isOpen()) {
        ends.evidence(SessionIo.Evidence.ENDED); // it cannot be read here (a transaction is open)
      }
    } catch (SQLException e) {
      endedWhileWaiting(e);
    }
  }

  private void endedWhileWaiting(SQLException e) {
    if (ends.endReason() == null) {
      LOG.debug("{} Session ended while waiting: {}", session.id().context(), e.toString());
      ends.endSession(
          closing.getAsBoolean() ? LossReason.CLOSED : LossReason.SESSION_LOST, e, false);
    }
  }

  /**
   * Reads the socket for a bare EOF or reset if nothing read it for a slice and nobody is using the
   * session (never queues ahead of a user thread): at most a millisecond on the socket.
   */
  void readIfUnread() {
    if (!session.proofs().unreadFor(SLICE_NANOS) || !io.tryLockIo()) {
      return;
    }
    try {
      if (ends.endReason() == null && session.isOpen()) {
        ends.evidence(io.probe(0, true));
      }
    } finally {
      io.unlockIo();
    }
  }

  /**
   * A class, not a lambda: a lambda's call site is linked when first reached, and the worker is
   * made between a grant and its announcement, where the warm-up cannot reach it.
   */
  private final class CutShort implements BooleanSupplier {
    @Override
    public boolean getAsBoolean() {
      return !jobs.isEmpty() || ends.endReason() != null;
    }
  }
}
