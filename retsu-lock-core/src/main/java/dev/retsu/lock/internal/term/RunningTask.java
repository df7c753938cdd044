package dev.retsu.lock.internal.term;

/**
 * The worker's thread and what runs on it right now: the refresh of one term (with its deadline) or
 * a job; and the interrupt that ends a refresh from another thread, told apart from a caller's
 * interrupt, which is a stop request. The worker's thread writes; the watchdog and the threads that
 * end terms read. Thread-safe.
 */
final class RunningTask {

  private volatile Thread thread;
  private volatile TermState running;
  private volatile long deadline = Long.MAX_VALUE;
  private volatile boolean interruptedByUs;
  private volatile SessionWatchdog watchdog;

  /**
   * Whether the worker is inside a job (a group's batch of tries, a release): set before the job
   * checks for a close, so a close either sees the job and lets the worker finish after it, or the
   * job sees the close and does not run. A close that finished the session under a running job
   * would miss the terms that job starts and announces.
   */
  private volatile boolean inJob;

  /** The worker's thread from now on: the calling one. */
  void bindToCurrentThread() {
    thread = Thread.currentThread();
  }

  /** The thread running the schedule, or null before it runs. */
  Thread thread() {
    return thread;
  }

  /** Whether the calling thread is the worker's. */
  boolean onWorkerThread() {
    return Thread.currentThread() == thread;
  }

  /** The term whose refresh runs now, or null. */
  TermState running() {
    return running;
  }

  /** When the running refresh times out (monotonic), or {@link Long#MAX_VALUE}. */
  long deadline() {
    return deadline;
  }

  /** Marks {@code t}'s refresh running until {@code deadlineNanos}; the worker's thread alone. */
  void start(TermState t, long deadlineNanos) {
    deadline = deadlineNanos;
    running = t;
    wakeWatchdog(); // it holds the refresh's deadline
  }

  /** Marks the refresh returned and clears our own interrupt; the worker's thread alone. */
  void stop() {
    running = null;
    deadline = Long.MAX_VALUE;
    clearOwnInterrupt();
  }

  /** Whether the worker is inside a job. */
  boolean inJob() {
    return inJob;
  }

  /** Marks the worker in a job, or out of it; the worker's thread alone. */
  void inJob(boolean in) {
    inJob = in;
  }

  /** Interrupts the worker if it runs a task and this is another thread. */
  void interrupt() {
    Thread w = thread;
    if (running != null && w != null && Thread.currentThread() != w) {
      interruptedByUs = true;
      w.interrupt();
    }
  }

  /** Whether the worker's thread was interrupted by someone else than this worker. */
  boolean interruptedByCaller() {
    return Thread.currentThread().isInterrupted() && !interruptedByUs;
  }

  /** Clears our own interrupt on the worker's thread (a stop request from the caller stays). */
  void clearOwnInterrupt() {
    if (interruptedByUs) {
      interruptedByUs = false;
      Thread.interrupted();
    }
  }

  /** The watchdog that watches this worker's session from now on. */
  void watchedBy(SessionWatchdog w) {
    watchdog = w;
  }

  /** Wakes the session's watchdog, so that it reads its duties again. */
  void wakeWatchdog() {
    SessionWatchdog w = watchdog;
    if (w != null) {
      w.wake();
    }
  }
}
