package dev.retsu.lock.internal;

import java.time.Instant;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.LockSupport;

/**
 * The one source of time and waiting for the loop, so unit tests can run the loop's decisions on a
 * simulated clock. {@link #SYSTEM} is the real one: {@link System#nanoTime()} for deadlines and
 * intervals, the wall clock for pauses the monotonic clock does not see (system suspend, some VM
 * freezes), {@link Condition#awaitNanos} for waits that {@code close()} must be able to cut short.
 * Implementations are thread-safe.
 */
public abstract class TimeSource {

  /** Real time. */
  public static final TimeSource SYSTEM =
      new TimeSource() {
        @Override
        public long nanoTime() {
          return System.nanoTime();
        }

        @Override
        public long wallMillis() {
          return System.currentTimeMillis();
        }

        @Override
        public Instant now() {
          return Instant.now();
        }

        @Override
        public long awaitNanos(Condition condition, long nanos) throws InterruptedException {
          return condition.awaitNanos(nanos);
        }

        @Override
        public void park(long nanos) {
          LockSupport.parkNanos(this, nanos);
        }

        @Override
        public boolean simulated() {
          return false;
        }
      };

  /** Monotonic nanoseconds, for deadlines and intervals. */
  public abstract long nanoTime();

  /** Wall-clock milliseconds: the second clock a self-fencing deadline is checked on. */
  public abstract long wallMillis();

  /** The current instant, for term start times and logs. */
  public abstract Instant now();

  /**
   * Waits on {@code condition} (its lock held by the caller) up to {@code nanos}.
   *
   * @return the nanoseconds left, as {@link Condition#awaitNanos} returns
   */
  public abstract long awaitNanos(Condition condition, long nanos) throws InterruptedException;

  /** Parks the watchdog up to {@code nanos}; it is unparked early when a deadline moves. */
  public abstract void park(long nanos);

  /**
   * Whether time is simulated: then the leader waits between refreshes on this source instead of
   * the session's socket.
   */
  public abstract boolean simulated();

  /**
   * Whole milliseconds of a nanosecond count.
   *
   * @param nanos nanoseconds
   * @return milliseconds, rounded down
   */
  public static long millis(long nanos) {
    return TimeUnit.NANOSECONDS.toMillis(nanos);
  }
}
