package dev.retsu.lock.internal.session;

import dev.retsu.lock.LossReason;
import dev.retsu.lock.internal.Diagnostics;
import java.sql.SQLException;
import java.util.function.BooleanSupplier;

/**
 * The hooks of one guarded view of a {@link LockSession}: every call takes the session's I/O lock
 * and is refused with 08003 once the holder's term is over; an ownership proof that is due runs
 * before the call (so no statement of user code succeeds more than a heartbeat after user SQL
 * released a key); the call marks the session touched, text that may release it marks it suspect, a
 * completed round trip proves it alive, and a session-lost failure ends it. Thread-safe.
 */
final class GuardHooks implements SessionGuard.Hooks {

  private final LockSession session;
  private final BooleanSupplier over;

  GuardHooks(LockSession session, BooleanSupplier over) {
    this.session = session;
    this.over = over;
  }

  @Override
  public void enter() throws SQLException {
    session.ioLock().lock();
    try {
      if (!session.isOpen() || over.getAsBoolean()) {
        throw session.closed();
      }
      if (session.proofs().ownershipDue() && session.canProveNow()) {
        try {
          session.prove();
        } catch (ProofException e) {
          // reported to the session's listener, which ended the holder's term
        }
        if (!session.isOpen() || over.getAsBoolean()) {
          throw session.closed();
        }
      }
      session.proofs().touched();
    } catch (SQLException | RuntimeException | Error e) {
      session.ioLock().unlock();
      throw e;
    }
  }

  @Override
  public void exit(long startNanos, boolean roundTrip, SQLException failure) {
    try {
      if (failure != null && Diagnostics.isSessionLost(failure.getSQLState())) {
        session.listener().sessionEnded(LossReason.SESSION_LOST, failure);
      } else if (failure == null && roundTrip) {
        session.proofs().alive(startNanos);
      }
      if (session.foreignThread()) {
        session.proofs().foreignCall();
      }
    } finally {
      session.ioLock().unlock();
    }
  }

  @Override
  public void sql(String sql) {
    if (SuspectSql.mayRelease(sql)) {
      session.proofs().suspect();
    }
  }
}
