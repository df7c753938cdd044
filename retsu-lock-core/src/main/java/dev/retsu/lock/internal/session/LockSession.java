package dev.retsu.lock.internal.session;

import dev.retsu.lock.FencingToken;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.SqlFunction;
import dev.retsu.lock.internal.TimeSource;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One physical backend we own and the keys it holds, for every recipe (invariants 2, 3, 5 client
 * side, 8). The session is borrowed once and never returned to a pool: {@link #end()} and {@link
 * #abort()} end it through {@link SessionTerminator}, which releases every key at once.
 *
 * <ul>
 *   <li>one I/O lock, <b>fair</b>, serialises every call on the session, the library's and user
 *       code's from any thread; the idle wait on the socket ({@link SessionSocket#awaitEvent})
 *       holds it one slice at a time, so a thread that queued meanwhile gets the session next;
 *   <li>guarded views ({@link #view}) for the holder's work, with the one rule for suspicious text
 *       ({@link SuspectSql}), the liveness and ownership bookkeeping ({@link Proofs}), and an
 *       ownership proof before a user statement when one is due;
 *   <li>{@link #prove()}: O(1) by pid and marker while user code has not touched the session since
 *       the last full proof, else one {@code pg_locks} read that also re-applies the settings when
 *       {@code RESET ALL} or {@code DISCARD} cleared them;
 *   <li>the probe, the socket wait, autocommit repair, the fencing token and the names and notices
 *       that show it ({@link SessionToken}), batch lock and unlock.
 * </ul>
 *
 * <p>What it finds, it reports to its {@link Listener} on the calling thread, with the I/O lock
 * held. Thread-safe.
 */
public final class LockSession implements Session, SessionIo {

  private static final Logger LOG = LoggerFactory.getLogger(LockSession.class);

  private final SessionId id;
  private final Connection conn;
  private final SessionToken token;
  private final TimeSource time;
  private final Proofs proofs;
  private final int roundTripMillis;
  private final ReentrantLock io = new ReentrantLock(true);
  private final AtomicBoolean open = new AtomicBoolean(true);
  private final SessionSocket socket;
  private final Set<LockKey> keys = ConcurrentHashMap.newKeySet();
  private volatile Listener listener = Listener.NONE;

  LockSession(
      SessionId id,
      Connection conn,
      SessionSettings settings,
      TimeSource time,
      Proofs proofs,
      int roundTripMillis) {
    this.id = id;
    this.conn = conn;
    this.time = time;
    this.proofs = proofs;
    this.roundTripMillis = roundTripMillis;
    this.socket = new SessionSocket(id, conn, io, open, proofs);
    this.token = new SessionToken(id, conn, settings, time, proofs);
  }

  @Override
  public SessionId id() {
    return id;
  }

  @Override
  public Proofs proofs() {
    return proofs;
  }

  @Override
  public void listen(Listener l) {
    this.listener = l;
  }

  @Override
  public SessionIo io() {
    return this;
  }

  @Override
  public boolean isOpen() {
    return open.get();
  }

  /** The keys it holds, as far as the library knows. */
  public Set<LockKey> keys() {
    return Set.copyOf(keys);
  }

  /**
   * Records keys this session was granted outside {@link #tryLock} (a waiting standby's grant).
   *
   * @param taken the keys
   */
  public void held(Collection<LockKey> taken) {
    keys.addAll(taken);
  }

  /**
   * A guarded view of the session for one holder (a term, a plain lease): every call through it
   * takes the I/O lock, and fails with 08003 once {@code over} holds or the session ended.
   *
   * @param over whether the holder may no longer use the session
   * @return the view; no object reachable from it hands out the session
   */
  @Override
  public Connection view(BooleanSupplier over) {
    return SessionGuard.guard(conn, new GuardHooks(this, over), id.context());
  }

  SQLException closed() {
    return SessionSocket.closed(id);
  }

  /**
   * Proves that the session is alive, is the backend recorded at open and holds its keys, in one
   * round trip (see {@link OwnershipProof}). Keys it no longer holds are reported and dropped; a
   * session that cannot prove anything is reported ended.
   *
   * @return the keys it no longer holds (empty when all are held)
   * @throws ProofException when the session ended, is shared, or the proof could not run
   */
  @Override
  public Set<LockKey> prove() throws ProofException {
    io.lock();
    try {
      if (!open.get()) {
        throw new ProofException(LossReason.CLOSED, closed());
      }
      Set<LockKey> missing;
      try {
        missing = OwnershipProof.run(this, conn, token.currentSettings(), roundTripMillis);
      } catch (ProofException e) {
        listener.sessionEnded(e.reason(), e.getCause());
        throw e;
      }
      if (!missing.isEmpty()) {
        keys.removeAll(missing);
        listener.keysLost(missing);
      }
      return missing;
    } finally {
      io.unlock();
    }
  }

  /** The keys a full proof checks (the I/O lock held). */
  Set<LockKey> expected() {
    return keys;
  }

  void checkBackend(int pid) throws ProofException {
    if (pid != id.pid()) {
      throw new ProofException(LossReason.POOLER_DETECTED, Refusals.pidChanged(id, pid));
    }
  }

  /** Logs, once per session, that user SQL reset it and its settings were applied again. */
  void settingsReapplied() {
    token.settingsReapplied();
  }

  ReentrantLock ioLock() {
    return io;
  }

  /** Whether the calling thread is not the one that waits on the socket between refreshes. */
  boolean foreignThread() {
    return socket.foreignThread();
  }

  Listener listener() {
    return listener;
  }

  /**
   * Whether a round trip now would leave user code's transaction as it is: false while autocommit
   * is off and no transaction has started (a statement would start one and take its snapshot), or
   * inside a failed transaction. Call with the I/O lock held.
   */
  @Override
  public boolean canProveNow() {
    try {
      PgSession.Transaction tx = PgSession.transaction(conn);
      return tx != PgSession.Transaction.FAILED
          && (conn.getAutoCommit() || tx == PgSession.Transaction.OPEN);
    } catch (SQLException e) {
      return true; // the proof itself reports what is wrong with the session
    }
  }

  @Override
  public Evidence probe(long maxWaitNanos, boolean readSocket) {
    return socket.probe(maxWaitNanos, readSocket);
  }

  /** Takes the I/O lock if no other thread holds it or waits for it (never barges). */
  @Override
  public boolean tryLockIo() {
    return socket.tryLock(0);
  }

  /** Releases the I/O lock taken with {@link #tryLockIo()}. */
  @Override
  public void unlockIo() {
    io.unlock();
  }

  @Override
  public boolean awaitEvent(int millis) throws SQLException {
    return socket.awaitEvent(millis);
  }

  @Override
  public boolean countsPendingBytes() {
    return socket.countsPendingBytes;
  }

  /**
   * Puts the session back in autocommit with no transaction open, after user work: rolls back what
   * was left uncommitted.
   *
   * @return true if something had to be rolled back or autocommit turned back on
   * @throws SQLException when the session failed
   */
  @Override
  public boolean repairAutocommit() throws SQLException {
    io.lock();
    try {
      return open.get() && SessionBorrow.endTransaction(conn);
    } finally {
      io.unlock();
    }
  }

  /** After a failed statement: nothing left open, so that the keys can be unlocked next. */
  private void leaveNoTransaction(SQLException failure) {
    try {
      SessionBorrow.endTransaction(conn);
    } catch (SQLException e) {
      failure.addSuppressed(e);
    }
  }

  /**
   * Records the token that the statement which won the key took (a WAIT grant): the next {@link
   * #fencingToken()} returns it without a round trip.
   *
   * @param token the token taken once the key was granted
   */
  public void tokenTaken(FencingToken token) {
    this.token.taken(token);
  }

  /**
   * Takes a fencing token on this session ({@link SessionToken#take}); checks that the backend did
   * not change. A failure leaves no transaction open, so the keys just taken can be unlocked.
   *
   * @throws SQLException when the statement failed (a changed backend is an {@link
   *     dev.retsu.lock.UnsafeSessionException})
   */
  @Override
  public FencingToken fencingToken(List<LockKey> announce) throws SQLException {
    io.lock();
    try {
      if (!open.get()) {
        throw closed();
      }
      try {
        return token.take(announce);
      } catch (SQLException e) {
        leaveNoTransaction(e);
        throw e;
      }
    } finally {
      io.unlock();
    }
  }

  /**
   * Looks for a preferred candidate's WAIT standby waiting for a lock this session holds ({@link
   * SessionSql#preferredWaiting}); a success proves the session alive.
   *
   * @return its pid, or 0
   * @throws SQLException when the statement failed
   */
  @Override
  public int preferredWaiting() throws SQLException {
    return call(
        c -> {
          long start = time.nanoTime();
          int pid = SessionSql.preferredWaiting(c);
          proofs.alive(start);
          return pid;
        });
  }

  /**
   * Notifies {@code released} before a graceful release ({@link SessionToken#released}); best
   * effort, and nothing on a session already ended.
   */
  private void released(String[] payloads, boolean thenUnlockAll) {
    if (payloads.length == 0) {
      return;
    }
    io.lock();
    try {
      if (!open.get()) {
        return;
      }
      token.released(List.of(payloads), thenUnlockAll);
    } finally {
      io.unlock();
    }
  }

  /**
   * Tries keys in one statement, taking at most {@code limit}; the backend, the primary and the
   * marker are checked before any lock.
   *
   * @return the keys taken, in the batch's order
   * @throws SQLException when the statement failed (the session should end: it may hold keys)
   * @throws ProofException when the backend changed, lost its marker or is a hot standby
   */
  @Override
  public List<LockKey> tryLock(List<LockKey> batch, int limit) throws SQLException, ProofException {
    return BatchSql.tryLock(this, conn, io, batch, limit);
  }

  /**
   * Unlocks keys on this session in one statement; keys it turns out not to hold are logged. The
   * {@code released} notices go first, in their own statement, so that they are committed before
   * any key is free.
   *
   * @param release the keys
   * @param releasedNotices the notices of the terms that end gracefully ({@code Notices#released}),
   *     or none
   * @throws SQLException when the statement failed (whether the keys are held is then unknown)
   * @throws ProofException when the backend changed
   */
  @Override
  public void unlock(List<LockKey> release, String... releasedNotices)
      throws SQLException, ProofException {
    released(releasedNotices, false);
    BatchSql.unlock(this, conn, io, release);
    keys.removeAll(release);
  }

  String marker() {
    return token.marker();
  }

  TimeSource time() {
    return time;
  }

  /**
   * Ends the physical session, which releases every key it holds; never returns it to a pool. A
   * call in progress on another thread is aborted. A graceful end first notifies {@code
   * releasedNotices} in the statement that also unlocks every key once they are committed (when the
   * session is in autocommit with no transaction open), so that a successor waiting on a key hears
   * of the graceful end before it is granted. Idempotent; never throws.
   *
   * @param releasedNotices the notices of the terms that end gracefully, or none
   */
  @Override
  public void end(String... releasedNotices) {
    released(releasedNotices, true); // the session ends next
    if (open.compareAndSet(true, false)) {
      SessionTerminator.endSession(id.dataSource(), conn, io, id.context());
      LOG.debug("{} Session of backend pid {} ended", id.context(), id.pid());
    }
  }

  /**
   * Ends the session at once without writing to it (self-fencing: no socket write that could
   * block). Idempotent; never throws.
   */
  @Override
  public void abort() {
    if (open.compareAndSet(true, false)) {
      SessionTerminator.endSession(id.dataSource(), conn, true, id.context());
      LOG.debug("{} Session of backend pid {} aborted", id.context(), id.pid());
    }
  }

  /**
   * Runs a recipe's own statements on the raw session with the I/O lock held (the WAIT standby's
   * wait); never user code.
   *
   * @param work the statements
   * @param <T> their result
   * @return what the work returned
   * @throws SQLException from the work, or 08003 when the session ended
   */
  @Override
  public <T> T call(SqlFunction<T> work) throws SQLException {
    io.lock();
    try {
      if (!open.get()) {
        throw closed();
      }
      return work.apply(conn);
    } finally {
      io.unlock();
    }
  }

  @Override
  public String toString() {
    return "LockSession" + id.context() + "{pid=" + id.pid() + (open.get() ? "" : ", ended") + "}";
  }
}
