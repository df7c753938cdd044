package dev.retsu.lock;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.DoubleSupplier;

/**
 * A candidate that does not lead: one attempt at a time, in {@link TakeoverMode#POLL} (borrow a
 * connection, try the lock, give the connection back holding nothing) or {@link TakeoverMode#WAIT}
 * (block on the standing waiting session, opened at first use), and how long to wait after each. It
 * never holds a pooled connection between attempts; in WAIT it holds only its own waiting session,
 * which {@link #close()} aborts at once. Thread-safe: attempts from the loop's thread, {@link
 * #close()} from any.
 */
final class Standby implements AutoCloseable {

  private final LoopSettings settings;
  private final DoubleSupplier random;
  private volatile LockWaiter waiter;
  private volatile boolean closed;
  private volatile boolean reached;

  Standby(LoopSettings settings) {
    this(settings, () -> ThreadLocalRandom.current().nextDouble());
  }

  Standby(LoopSettings settings, DoubleSupplier random) {
    this.settings = settings;
    this.random = random;
  }

  /**
   * One attempt.
   *
   * @return the lease if the lock was taken, empty if it is held elsewhere (in WAIT: the wait timed
   *     out)
   * @throws AdvisoryLockException if the attempt failed (the waiting session is then gone)
   */
  Optional<AdvisoryLockLease> attempt() {
    if (settings.takeover() == TakeoverMode.POLL) {
      Optional<AdvisoryLockLease> lease = settings.lock().tryAcquire();
      reached = true;
      if (lease.isEmpty()) {
        WarmUp.leaderPath(); // a standby now: load what a takeover will run
      }
      return lease;
    }
    LockWaiter w = waiter;
    if (w == null) {
      w = LockWaiter.open(settings.lock(), settings.waitTimeout());
      reached = true;
      waiter = w;
      if (closed) {
        w.close();
        waiter = null;
        return Optional.empty();
      }
      WarmUp.leaderPath(); // before the wait whose grant must be fast
    }
    try {
      Optional<AdvisoryLockLease> granted = w.await();
      if (granted.isPresent()) {
        waiter = null; // its session now belongs to the lease
      }
      return granted;
    } catch (AdvisoryLockException e) {
      waiter = null; // the waiter ended its session
      throw e;
    }
  }

  /**
   * Whether any attempt has reached the database: until then a failure is a configuration error
   * (wrong URL, no such database) and fails fast; after it, a failure is an outage to ride out.
   */
  boolean reachedDatabase() {
    return reached;
  }

  /** After an attempt found the lock held elsewhere: POLL waits a jittered retry interval. */
  Duration afterHeldElsewhere() {
    return settings.takeover() == TakeoverMode.WAIT ? Duration.ZERO : jittered();
  }

  /**
   * retryInterval × (1 − retryJitter × u), u uniform in [0, 1): jitter only shortens the wait, so
   * retryInterval stays the longest a free lock waits for a POLL standby.
   */
  Duration jittered() {
    double jitter = settings.retryJitter();
    Duration interval = settings.retryInterval();
    if (jitter == 0) {
      return interval;
    }
    double factor = 1 - random.getAsDouble() * jitter;
    return Duration.ofNanos((long) (interval.toNanos() * factor));
  }

  /**
   * The wait after the {@code failedTerms}-th failed term in a row under STEP_DOWN: retryInterval,
   * doubling, at most maxBackoff.
   */
  Duration backoff(int failedTerms) {
    Duration d = settings.retryInterval();
    Duration max = settings.maxBackoff();
    for (int i = 1; i < failedTerms && d.compareTo(max) < 0; i++) {
      d = d.multipliedBy(2);
    }
    return d.compareTo(max) > 0 ? max : d;
  }

  /** Aborts a wait in progress and ends the waiting session. Idempotent. */
  @Override
  public void close() {
    closed = true;
    LockWaiter w = waiter;
    if (w != null) {
      w.close();
      waiter = null;
    }
  }
}
