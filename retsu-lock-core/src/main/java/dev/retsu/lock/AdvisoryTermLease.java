package dev.retsu.lock;

import dev.retsu.lock.internal.PgSession;
import java.sql.Connection;
import java.sql.SQLException;

/**
 * The real {@link TermLease}: an {@link AdvisoryLockLease}, method for method. A wrapper rather
 * than an {@code implements} clause on the lease, because most of these methods are package-private
 * there and would otherwise have to become public API. Thread-safe.
 */
final class AdvisoryTermLease implements TermLease {

  private final AdvisoryLockLease lease;

  AdvisoryTermLease(AdvisoryLockLease lease) {
    this.lease = lease;
  }

  @Override
  public int backendPid() {
    return lease.backendPid();
  }

  @Override
  public String database() {
    return lease.database();
  }

  @Override
  public Connection connection() {
    return lease.connection();
  }

  @Override
  public <T> T withConnection(SqlFunction<T> work) throws SQLException {
    return lease.withConnection(work);
  }

  @Override
  public void watch(AdvisoryLockLease.Watcher watcher) {
    lease.watch(watcher);
  }

  @Override
  public FencingToken fencingToken() throws SQLException {
    return lease.fencingToken();
  }

  @Override
  public void verify(int timeoutMillis) {
    lease.verify(timeoutMillis);
  }

  @Override
  public PgSession.Evidence probe(long maxWaitNanos) {
    return lease.probe(maxWaitNanos);
  }

  @Override
  public boolean tryLockIo() {
    return lease.tryLockIo();
  }

  @Override
  public void unlockIo() {
    lease.unlockIo();
  }

  @Override
  public boolean canProveNow() {
    return lease.canProveNow();
  }

  @Override
  public boolean awaitSessionEvent(int millis) throws SQLException {
    return lease.awaitSessionEvent(millis);
  }

  @Override
  public boolean restoreAutocommit() throws SQLException {
    return lease.restoreAutocommit();
  }

  @Override
  public void abort() {
    lease.abort();
  }

  @Override
  public void close() {
    lease.close();
  }

  @Override
  public String toString() {
    return lease.toString();
  }
}
