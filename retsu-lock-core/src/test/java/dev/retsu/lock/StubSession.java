package dev.retsu.lock;

import dev.retsu.lock.internal.PgSession;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A {@link TermLease} without a database, for unit tests of the loop's decisions: every round trip
 * succeeds at once, and the two ways a lease ends its session, {@code close()} (the lock released)
 * and {@code abort()}, are appended to a log the test shares with its task and listeners. Tokens
 * increase across all stub leases. Thread-safe.
 */
final class StubTermLease implements TermLease {

  private static final AtomicLong XID = new AtomicLong(1_000);

  private final List<String> log;
  private final int pid;
  private final AtomicBoolean open = new AtomicBoolean(true);
  private final ReentrantLock io = new ReentrantLock();
  private volatile AdvisoryLockLease.Watcher watcher = AdvisoryLockLease.Watcher.NONE;
  private volatile SQLException tokenFailure;

  StubTermLease(List<String> log, int pid) {
    this.log = log;
    this.pid = pid;
  }

  /** Makes {@link #fencingToken()} fail, as a session that breaks right after the grant does. */
  StubTermLease failingToken(SQLException failure) {
    this.tokenFailure = failure;
    return this;
  }

  boolean isOpen() {
    return open.get();
  }

  /**
   * What the real lease does when a call on its session fails with a session-lost SQLState: it
   * tells the term, on the calling thread, with its I/O lock held.
   */
  void loseSession(SQLException failure) {
    io.lock();
    try {
      watcher.sessionLost(failure);
    } finally {
      io.unlock();
    }
  }

  @Override
  public int backendPid() {
    return pid;
  }

  @Override
  public String database() {
    return "stub";
  }

  @Override
  public Connection connection() {
    throw new UnsupportedOperationException("a stub lease has no connection");
  }

  @Override
  public <T> T withConnection(SqlFunction<T> work) {
    throw new UnsupportedOperationException("a stub lease has no connection");
  }

  @Override
  public void watch(AdvisoryLockLease.Watcher w) {
    this.watcher = w;
  }

  @Override
  public FencingToken fencingToken() throws SQLException {
    if (tokenFailure != null) {
      throw tokenFailure;
    }
    return new FencingToken(1, XID.incrementAndGet());
  }

  @Override
  public void verify(int timeoutMillis) {
    if (!open.get()) {
      throw new LeadershipLostException(
          LossReason.CLOSED, "The stub lease is closed", LockKey.of(pid), "stub", null);
    }
  }

  @Override
  public PgSession.Evidence probe(long maxWaitNanos) {
    return open.get() ? PgSession.Evidence.QUIET : PgSession.Evidence.ENDED;
  }

  @Override
  public boolean tryLockIo() {
    return io.tryLock();
  }

  @Override
  public void unlockIo() {
    io.unlock();
  }

  @Override
  public boolean canProveNow() {
    return true;
  }

  @Override
  public boolean awaitSessionEvent(int millis) {
    return false; // cannot wait on a socket: the loop waits on its time source instead
  }

  @Override
  public boolean restoreAutocommit() {
    return false;
  }

  @Override
  public void abort() {
    if (open.compareAndSet(true, false)) {
      log.add("aborted");
    }
  }

  @Override
  public void close() {
    if (open.compareAndSet(true, false)) {
      log.add("released");
    }
  }
}
