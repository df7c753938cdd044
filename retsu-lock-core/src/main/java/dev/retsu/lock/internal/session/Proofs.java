package dev.retsu.lock.internal.session;

import dev.retsu.lock.internal.TimeSource;
import java.time.Duration;

/**
 * Invariant 5 on one session: liveness and ownership are proven apart. Liveness is the self-fencing
 * deadline ({@link SelfFence}): any round trip on the session that succeeds, the library's or the
 * task's, moves it. Ownership is what only the library's proof shows: that the session still holds
 * its keys. A round trip of user code proves the session alive, never that user SQL did not release
 * a key on it (a function whose body unlocks says nothing in its text), so:
 *
 * <ul>
 *   <li>any call of user code on the session marks it touched: the next proof reads {@code
 *       pg_locks} instead of the O(1) pid and marker check;
 *   <li>text that may release or reset ({@link SuspectSql}) makes an ownership proof due at once;
 *   <li>on a touched session an ownership proof is due {@code heartbeatInterval} after the start of
 *       the last one, however busy the task keeps the session: the next check, the next statement
 *       of the task, or the watchdog runs it, so no check passes and no statement of the task
 *       succeeds more than {@code heartbeatInterval} after user SQL released a key.
 * </ul>
 *
 * <p>Writes happen with the session's I/O lock held; reads from any thread. Thread-safe.
 */
public final class Proofs {

  /**
   * How long after user code on another thread than the worker's last used the session the worker
   * leaves the socket free between refreshes (reading it once per slice for a bare EOF), so that
   * thread's calls do not queue behind the worker's waits on the socket.
   */
  public static final long SHARED_FOR_NANOS = 1_000_000_000L;

  private final TimeSource time;
  private final long heartbeatNanos;
  private final SelfFence fence;
  private volatile long lastOwnership;
  private volatile boolean touched;
  private volatile boolean suspect;
  private volatile long fullProofs;
  private volatile long lastRead;
  private volatile long lastForeignCall;
  private volatile boolean foreignCalls;

  /**
   * Bookkeeping of a session whose locking statement started at {@code startNanos}: that statement
   * proved both.
   *
   * @param time the clock
   * @param heartbeat the interval between proofs
   * @param selfFenceAfter the liveness deadline
   * @param startNanos when the locking statement started (monotonic)
   * @param startWallMillis the same moment on the wall clock
   */
  public Proofs(
      TimeSource time,
      Duration heartbeat,
      Duration selfFenceAfter,
      long startNanos,
      long startWallMillis) {
    this.time = time;
    this.heartbeatNanos = heartbeat.toNanos();
    this.fence = new SelfFence(time, selfFenceAfter, startNanos, startWallMillis);
    this.lastOwnership = startNanos;
    this.lastRead = startNanos;
  }

  /**
   * The liveness deadline.
   *
   * @return the self-fencing deadline
   */
  public SelfFence fence() {
    return fence;
  }

  /** User code used the session. */
  public void touched() {
    touched = true;
  }

  /** User code sent text that may release or reset. */
  public void suspect() {
    suspect = true;
    touched = true;
  }

  /** Whether the next proof must read {@code pg_locks}. */
  boolean needsFullProof() {
    return touched || suspect;
  }

  /**
   * Whether user SQL may have released a key since the last ownership proof: at once after
   * suspicious text, one heartbeat after the last proof once the session was touched.
   *
   * @return true when no check may pass before an ownership proof
   */
  public boolean ownershipDue() {
    return suspect || (touched && time.nanoTime() - lastOwnership - heartbeatNanos >= 0);
  }

  /**
   * When the next heartbeat is due: one interval after the start of the last ownership proof. A
   * round trip that proves only liveness (the task's statements, or a library statement that checks
   * neither the backend pid nor the marker, such as the look for a preferred candidate at each
   * refresh) moves the self-fencing deadline but never postpones this: otherwise a refresh more
   * frequent than the heartbeat would keep the pid and marker check from ever running, and a
   * backend swapped by a transaction-mode pooler would go unseen.
   *
   * @return a monotonic time
   */
  public long nextHeartbeat() {
    return lastOwnership + heartbeatNanos;
  }

  /** A round trip that started at {@code startNanos} succeeded: the session was alive then. */
  public void alive(long startNanos) {
    fence.proved(startNanos);
    read();
  }

  /** An ownership proof that started at {@code startNanos} found every key it checked. */
  public void owned(long startNanos, boolean full) {
    fence.proved(startNanos);
    read();
    lastOwnership = startNanos;
    if (full) {
      touched = false;
      suspect = false;
      fullProofs++;
    }
  }

  /**
   * How many proofs read {@code pg_locks} so far (tests read it).
   *
   * @return the count
   */
  public long fullProofs() {
    return fullProofs;
  }

  /**
   * A read of the session's socket that would have seen a bare EOF or a reset ended now: a round
   * trip, a timed probe, a wait on the socket.
   */
  public void read() {
    lastRead = time.nanoTime();
  }

  /**
   * Whether no read of the socket ended in the last {@code nanos}: a bare EOF or reset could be
   * waiting unseen for that long.
   *
   * @param nanos how long
   * @return true when the last read is at least that old
   */
  public boolean unreadFor(long nanos) {
    return time.nanoTime() - lastRead - nanos >= 0;
  }

  /** A call of user code on a thread other than the session worker's ended now. */
  public void foreignCall() {
    lastForeignCall = time.nanoTime();
    foreignCalls = true;
  }

  /**
   * Whether user code on another thread than the session worker's used the session in the last
   * {@code nanos}: the worker then leaves the socket free instead of waiting on it.
   *
   * @param nanos how long
   * @return true when such a call ended that recently
   */
  public boolean foreignUseWithin(long nanos) {
    return foreignCalls && time.nanoTime() - lastForeignCall - nanos < 0;
  }
}
