package dev.retsu.lock;

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
class FakeTime extends TimeSource {

  final AtomicLong nanos = new AtomicLong(1_000_000_000L);
  final AtomicLong wallOffsetMillis = new AtomicLong(1_800_000_000_000L);
  final List<Duration> sleeps = new CopyOnWriteArrayList<>();

  /** Called on every simulated wait, before the clock moves; for tests that sample meanwhile. */
  void onWait(Duration d) throws InterruptedException {}

  @Override
  long nanoTime() {
    return nanos.get();
  }

  @Override
  long wallMillis() {
    return wallOffsetMillis.get() + nanos.get() / 1_000_000L;
  }

  @Override
  Instant now() {
    return Instant.ofEpochMilli(wallMillis());
  }

  @Override
  long awaitNanos(Condition condition, long waitNanos) throws InterruptedException {
    if (Thread.interrupted()) {
      throw new InterruptedException();
    }
    Duration d = Duration.ofNanos(waitNanos);
    onWait(d);
    sleeps.add(d);
    nanos.addAndGet(waitNanos);
    Thread.yield();
    return 0;
  }

  @Override
  void park(long parkNanos) {
    LockSupport.parkNanos(this, Math.min(parkNanos, 1_000_000L));
  }

  @Override
  boolean simulated() {
    return true;
  }

  void advance(Duration d) {
    nanos.addAndGet(d.toNanos());
  }

  /** Moves only the wall clock, as a system suspend does. */
  void suspend(Duration d) {
    wallOffsetMillis.addAndGet(d.toMillis());
  }

  Duration elapsedSince(long start) {
    return Duration.ofNanos(nanos.get() - start);
  }
}
