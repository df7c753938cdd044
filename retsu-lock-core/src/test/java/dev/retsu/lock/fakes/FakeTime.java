package dev.retsu.lock.fakes;

import dev.retsu.lock.internal.TimeSource;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.LockSupport;

/**
 * Simulated time for the loop: every wait advances the clock at once and is recorded. The wall
 * clock moves with the monotonic one unless a test moves it alone (a suspend the monotonic clock
 * does not see).
 */
public class FakeTime extends TimeSource {

  public final AtomicLong nanos = new AtomicLong(1_000_000_000L);
  public final AtomicLong wallOffsetMillis = new AtomicLong(1_800_000_000_000L);
  public final List<Duration> sleeps = new CopyOnWriteArrayList<>();

  /** When set, waits pass real time (a millisecond) and do not move the clock. */
  private volatile boolean frozen;

  /** Called on every simulated wait, before the clock moves; for tests that sample meanwhile. */
  public void onWait(Duration d) throws InterruptedException {}

  @Override
  public long nanoTime() {
    return nanos.get();
  }

  @Override
  public long wallMillis() {
    return wallOffsetMillis.get() + nanos.get() / 1_000_000L;
  }

  @Override
  public Instant now() {
    return Instant.ofEpochMilli(wallMillis());
  }

  @Override
  public long awaitNanos(Condition condition, long waitNanos) throws InterruptedException {
    if (Thread.interrupted()) {
      throw new InterruptedException();
    }
    if (frozen) {
      Thread.sleep(1);
      return 0;
    }
    Duration d = Duration.ofNanos(waitNanos);
    onWait(d);
    sleeps.add(d);
    nanos.addAndGet(waitNanos);
    Thread.yield();
    return 0;
  }

  @Override
  public void park(long parkNanos) {
    LockSupport.parkNanos(this, Math.min(parkNanos, 1_000_000L));
  }

  @Override
  public boolean simulated() {
    return true;
  }

  /**
   * Stops waits from moving the clock: only {@link #advance} does, so several threads waiting on
   * one clock cannot push one another past their deadlines.
   */
  public void freeze() {
    frozen = true;
  }

  public void advance(Duration d) {
    nanos.addAndGet(d.toNanos());
  }

  /** Moves only the wall clock, as a system suspend does. */
  public void suspend(Duration d) {
    wallOffsetMillis.addAndGet(d.toMillis());
  }

  public Duration elapsedSince(long start) {
    return Duration.ofNanos(nanos.get() - start);
  }
}
