package dev.retsu.lock.spring.integration;

import dev.retsu.lock.AdvisoryLock;
import dev.retsu.lock.AdvisoryLockException;
import dev.retsu.lock.AdvisoryLockLease;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ConcurrentModificationException;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One key of a {@link RetsuLockRegistry}: a local {@link ReentrantLock} for per-thread ownership
 * and re-entrancy, and, while held, the lease whose session holds the key. Only the owning thread
 * touches {@link #lease}, so the local lock guards it.
 */
final class RegistryLock implements Lock {

  private static final Logger LOG = LoggerFactory.getLogger(RegistryLock.class);
  private static final String UNLOCK = "SELECT pg_catalog.pg_advisory_unlock(?::bigint)";

  private final String name;
  private final AdvisoryLock lock;
  private final RetsuLockRegistry registry;
  private final ReentrantLock local = new ReentrantLock();
  private volatile long lastUsedNanos = System.nanoTime();
  private AdvisoryLockLease lease;

  RegistryLock(String name, AdvisoryLock lock, RetsuLockRegistry registry) {
    this.name = name;
    this.lock = lock;
    this.registry = registry;
  }

  void touch() {
    lastUsedNanos = System.nanoTime();
  }

  boolean unusedFor(long nowNanos, long ageMillis) {
    return !local.isLocked()
        && !local.hasQueuedThreads()
        && TimeUnit.NANOSECONDS.toMillis(nowNanos - lastUsedNanos) > ageMillis;
  }

  @Override
  public void lock() {
    local.lock();
    boolean interrupted = false;
    try {
      while (true) {
        try {
          if (acquire(Long.MAX_VALUE, false)) {
            return;
          }
        } catch (InterruptedException e) {
          interrupted = true; // lock() is not interruptible: keep waiting, restore the flag after
        }
      }
    } catch (RuntimeException | Error e) {
      local.unlock();
      throw e;
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  @Override
  public void lockInterruptibly() throws InterruptedException {
    local.lockInterruptibly();
    try {
      acquire(Long.MAX_VALUE, true);
    } catch (InterruptedException | RuntimeException | Error e) {
      local.unlock();
      throw e;
    }
  }

  @Override
  public boolean tryLock() {
    if (!local.tryLock()) {
      return false;
    }
    return acquireOrUnlock(0);
  }

  @Override
  public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
    long start = System.nanoTime();
    if (!local.tryLock(time, unit)) {
      return false;
    }
    long remaining = Math.max(0, unit.toNanos(time) - (System.nanoTime() - start));
    try {
      if (!acquire(remaining, true)) {
        local.unlock();
        return false;
      }
      return true;
    } catch (InterruptedException | RuntimeException | Error e) {
      local.unlock();
      throw e;
    }
  }

  private boolean acquireOrUnlock(long waitNanos) {
    try {
      if (acquire(waitNanos, true)) {
        return true;
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException | Error e) {
      local.unlock();
      throw e;
    }
    local.unlock();
    return false;
  }

  /**
   * With the local lock held by this thread: proves a re-entrant hold, or takes the key, waiting up
   * to {@code waitNanos} (in slices) when it is held elsewhere. Returns false when the wait ran
   * out; the local lock is still held either way.
   */
  private boolean acquire(long waitNanos, boolean interruptible) throws InterruptedException {
    if (local.getHoldCount() > 1) {
      prove();
      return true;
    }
    Optional<AdvisoryLockLease> got = lock.tryAcquire(); // zero wait, on a pooled connection
    long deadline = System.nanoTime() + Math.min(waitNanos, Long.MAX_VALUE / 2);
    while (got.isEmpty()) {
      long left = waitNanos == Long.MAX_VALUE ? Long.MAX_VALUE : deadline - System.nanoTime();
      if (left < TimeUnit.MILLISECONDS.toNanos(10)) {
        return false; // too short for a wait of its own
      }
      if (interruptible && Thread.interrupted()) {
        throw new InterruptedException("Interrupted while waiting for lock " + name);
      }
      Duration slice = registry.waitSlice();
      Duration wait = left < slice.toNanos() ? Duration.ofNanos(left) : slice;
      try {
        got = lock.acquire(wait); // a session of its own, in the server's lock queue
      } catch (AdvisoryLockException e) {
        if (e.getCause() instanceof InterruptedException) {
          if (interruptible) {
            InterruptedException ie =
                new InterruptedException("Interrupted while waiting for lock " + name);
            ie.initCause(e);
            throw ie;
          }
          Thread.interrupted(); // keep waiting; lock() restores the flag when it returns
          throw new InterruptedException();
        }
        throw e;
      }
    }
    lease = got.get();
    touch();
    return true;
  }

  /** One round trip proving the calling thread's hold; CME if the session lost the key. */
  void prove() {
    if (!local.isHeldByCurrentThread()) {
      throw new IllegalMonitorStateException("The current thread does not hold the lock " + name);
    }
    AdvisoryLockLease l = lease;
    if (l == null) {
      throw lost(null);
    }
    try {
      l.verify();
    } catch (AdvisoryLockException e) {
      // lost (LeadershipLostException), or the check could not run on this session: a hold that
      // cannot be proven is not one to act on
      throw lost(e);
    }
  }

  @Override
  public void unlock() {
    if (!local.isHeldByCurrentThread()) {
      throw new IllegalMonitorStateException("The current thread does not hold the lock " + name);
    }
    if (local.getHoldCount() > 1) {
      local.unlock();
      return;
    }
    AdvisoryLockLease l = lease;
    lease = null;
    try {
      if (l == null) {
        throw lost(null);
      }
      SQLException failure = null;
      boolean held = false;
      try {
        held = l.withConnection(this::unlockOn);
      } catch (SQLException e) {
        failure = e;
      } finally {
        l.close();
      }
      if (!held) {
        throw lost(failure);
      }
    } finally {
      touch();
      local.unlock();
    }
  }

  private boolean unlockOn(java.sql.Connection c) throws SQLException {
    int previous = c.getNetworkTimeout();
    c.setNetworkTimeout(Runnable::run, (int) lock.roundTripTimeout().toMillis());
    try (PreparedStatement ps = c.prepareStatement(UNLOCK)) {
      ps.setLong(1, lock.key().value());
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getBoolean(1);
      }
    } finally {
      c.setNetworkTimeout(Runnable::run, previous);
    }
  }

  private ConcurrentModificationException lost(Exception cause) {
    LOG.warn("{} Lock {} was lost by its session while held", lock, name);
    return new ConcurrentModificationException(
        "The lock "
            + name
            + " ("
            + lock.key()
            + ") is no longer held by its session (it ended or was unlocked); another process may"
            + " have held it meanwhile",
        cause);
  }

  Optional<AdvisoryLockLease> leaseOfCurrentThread() {
    return local.isHeldByCurrentThread() ? Optional.ofNullable(lease) : Optional.empty();
  }

  @Override
  public Condition newCondition() {
    throw new UnsupportedOperationException("Conditions are not supported by " + lock);
  }

  @Override
  public String toString() {
    return "RetsuRegistryLock{"
        + name
        + ", "
        + lock.key()
        + (local.isLocked() ? ", locked" : "")
        + "}";
  }
}
