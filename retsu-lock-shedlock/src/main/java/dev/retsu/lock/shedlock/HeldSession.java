package dev.retsu.lock.shedlock;

import dev.retsu.lock.AdvisoryLockLease;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One session that holds one ShedLock lock, from {@code lock()} until it is released: by the last
 * valid handle's {@code unlock()} (at once, or when {@code lockAtLeastFor} passes), by the timer
 * when {@code lockAtMostFor} passes, by a failed {@code extend}, or by the provider's close. Each
 * {@code lock()} or {@code extend()} makes a new {@link Handle}; only the newest one may act.
 *
 * <p>Release unlocks the key on the session ({@code pg_advisory_unlock}, one round trip) before it
 * ends the session, so that the lock is free when release returns, not when the server has got
 * round to ending the backend. The unlock is skipped when the lease was handed to a task and the
 * timer releases it: the task may be inside a statement, and ending the session is what counts.
 *
 * <p>Thread-safe: every state change happens under {@link #guard}.
 */
final class HeldSession {

  private static final Logger LOG = LoggerFactory.getLogger(HeldSession.class);
  private static final String UNLOCK = "SELECT pg_catalog.pg_advisory_unlock(?::bigint)";

  private final RetsuLockProvider provider;
  private final String name;
  private final AdvisoryLockLease lease;
  private final ReentrantLock guard = new ReentrantLock();

  // guarded by guard
  private Handle current;
  private ScheduledFuture<?> pending;
  private boolean released;
  private boolean handedOut;

  HeldSession(RetsuLockProvider provider, String name, AdvisoryLockLease lease) {
    this.provider = provider;
    this.name = name;
    this.lease = lease;
  }

  /** The first handle, with both bounds counted from {@code fromNanos}. */
  Handle activate(long fromNanos, Duration lockAtMostFor, Duration lockAtLeastFor) {
    guard.lock();
    try {
      current = new Handle(fromNanos, lockAtMostFor, lockAtLeastFor);
      scheduleExpiry(fromNanos, lockAtMostFor);
      return current;
    } finally {
      guard.unlock();
    }
  }

  Optional<AdvisoryLockLease> handOut() {
    guard.lock();
    try {
      if (released) {
        return Optional.empty();
      }
      handedOut = true;
      return Optional.of(lease);
    } finally {
      guard.unlock();
    }
  }

  /** Ends the session, unlocking first; idempotent. Called with or without the guard. */
  void release() {
    guard.lock();
    try {
      if (released) {
        return;
      }
      released = true;
      cancelPending();
      provider.forget(name, this);
      unlockQuietly();
      lease.close();
      LOG.debug("{} Lock {} released; session of pid {} ended", lease, name, lease.backendPid());
    } finally {
      guard.unlock();
    }
  }

  /** The timer's task when {@code lockAtMostFor} passes while the lock is still held. */
  private void expire() {
    guard.lock();
    try {
      if (released || pending == null) {
        return;
      }
      pending = null;
      LOG.warn(
          "{} Lock {} outlived its lockAtMostFor; ending its session (pid {})",
          lease,
          name,
          lease.backendPid());
      if (handedOut) {
        released = true;
        provider.forget(name, this);
        lease.close(); // aborts a statement the task may be running on it
      } else {
        release();
      }
    } finally {
      guard.unlock();
    }
  }

  private void scheduleExpiry(long fromNanos, Duration lockAtMostFor) {
    cancelPending();
    if (provider.enforceLockAtMostFor()) {
      long delay = fromNanos + lockAtMostFor.toNanos() - System.nanoTime();
      pending = provider.timer().schedule(this::expire, Math.max(0, delay), TimeUnit.NANOSECONDS);
    }
  }

  private void cancelPending() {
    if (pending != null) {
      pending.cancel(false);
      pending = null;
    }
  }

  private void unlockQuietly() {
    try {
      boolean unlocked =
          lease.withConnection(
              c -> {
                int previous = c.getNetworkTimeout();
                c.setNetworkTimeout(Runnable::run, provider.roundTripMillis());
                try {
                  return unlock(c);
                } finally {
                  c.setNetworkTimeout(Runnable::run, previous);
                }
              });
      if (!unlocked) {
        LOG.debug("{} Lock {} was no longer held by its session", lease, name);
      }
    } catch (SQLException | RuntimeException e) {
      // the session is gone or broken: ending it (next) releases whatever it still holds
      LOG.debug("{} Unlocking {} before ending its session failed: {}", lease, name, e.toString());
    }
  }

  private boolean unlock(Connection c) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(UNLOCK)) {
      ps.setLong(1, lease.key().value());
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getBoolean(1);
      }
    }
  }

  /** One {@code lock()} or {@code extend()} result; only the newest handle may act. */
  final class Handle implements SimpleLock {
    private final long atMostUntilNanos;
    private final long atLeastUntilNanos;

    Handle(long fromNanos, Duration lockAtMostFor, Duration lockAtLeastFor) {
      this.atMostUntilNanos = fromNanos + lockAtMostFor.toNanos();
      this.atLeastUntilNanos = fromNanos + lockAtLeastFor.toNanos();
    }

    /** Whether lockAtMostFor has passed (the timer may not have run yet). */
    private boolean expired() {
      return provider.enforceLockAtMostFor() && System.nanoTime() - atMostUntilNanos >= 0;
    }

    @Override
    public void unlock() {
      guard.lock();
      try {
        checkCurrent("unlocked");
        current = null;
        if (released) {
          LOG.warn(
              "{} Lock {} was unlocked after its session had ended (lockAtMostFor passed or the"
                  + " session was lost); another node may already have run the task",
              lease,
              name);
          return;
        }
        long hold = atLeastUntilNanos - System.nanoTime();
        if (hold <= 0) {
          release();
          return;
        }
        cancelPending();
        // the session is kept until lockAtLeastFor passes, then ended by the timer
        pending = provider.timer().schedule(HeldSession.this::release, hold, TimeUnit.NANOSECONDS);
      } finally {
        guard.unlock();
      }
    }

    @Override
    public Optional<SimpleLock> extend(Duration lockAtMostFor, Duration lockAtLeastFor) {
      long start = System.nanoTime();
      if (lockAtLeastFor.compareTo(lockAtMostFor) > 0) {
        throw new IllegalArgumentException(
            "lockAtLeastFor must not be longer than lockAtMostFor, but was "
                + lockAtLeastFor
                + " > "
                + lockAtMostFor);
      }
      guard.lock();
      try {
        checkCurrent("extended");
        if (released || expired()) {
          current = null;
          release();
          return Optional.empty();
        }
        if (!lease.isHeld()) {
          LOG.warn("{} Lock {} cannot be extended: its session no longer holds it", lease, name);
          current = null;
          release();
          return Optional.empty();
        }
        current = new Handle(start, lockAtMostFor, lockAtLeastFor);
        scheduleExpiry(start, lockAtMostFor);
        return Optional.of(current);
      } finally {
        guard.unlock();
      }
    }

    private void checkCurrent(String what) {
      if (current != this) {
        throw new IllegalStateException(
            "Lock "
                + name
                + " cannot be "
                + what
                + ": this handle was already unlocked or extended");
      }
    }

    @Override
    public String toString() {
      return "RetsuLock{" + name + ", pid=" + lease.backendPid() + "}";
    }
  }
}
