package dev.retsu.lock.internal.term;

import dev.retsu.lock.FencingToken;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.SqlFunction;
import dev.retsu.lock.fakes.FakeTime;
import dev.retsu.lock.internal.TimeSource;
import dev.retsu.lock.internal.session.Proofs;
import dev.retsu.lock.internal.session.Session;
import dev.retsu.lock.internal.session.SessionId;
import dev.retsu.lock.internal.session.SessionIo;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * A {@link Session} without a database, for unit tests of the term protocol and the loop's
 * decisions: every round trip succeeds at once (or as a test makes it fail), and the two ways a
 * session ends, {@code end()} (the keys released) and {@code abort()}, are appended to a log the
 * test shares with its task and listeners, as are the keys it unlocks. Tokens increase across all
 * stub sessions. Thread-safe.
 */
public final class StubSession implements Session, SessionIo {

  private static final AtomicLong XID = new AtomicLong(1_000);

  private final List<String> log;
  private final SessionId id;
  private final Proofs proofs;
  private final TimeSource time;
  private final AtomicBoolean open = new AtomicBoolean(true);
  private final ReentrantLock io = new ReentrantLock(true);
  private final Set<LockKey> keys = ConcurrentHashMap.newKeySet();
  private volatile Listener listener = Listener.NONE;
  private volatile SQLException tokenFailure;
  private volatile boolean silent;
  private volatile long abortedAt;
  private final List<Long> proofTimes = new java.util.concurrent.CopyOnWriteArrayList<>();

  /**
   * A stub session of backend {@code pid}.
   *
   * @param log where it writes what happens
   * @param pid its backend pid
   * @param time the test's clock
   * @param heartbeat the heartbeat interval
   * @param selfFenceAfter the liveness deadline
   */
  StubSession(
      List<String> log, int pid, TimeSource time, Duration heartbeat, Duration selfFenceAfter) {
    this.log = log;
    this.id =
        new SessionId(
            null, pid, "stub", LockKey.of(pid), "stub", "[stub pid=" + pid + "]", List.of());
    this.proofs = new Proofs(time, heartbeat, selfFenceAfter, time.nanoTime(), time.wallMillis());
    this.time = time;
  }

  /** A session holding {@code key}, with the loop preset of {@code settings}. */
  public static StubSession holding(
      List<String> log, int pid, LockKey key, TimeSource time, Duration hb, Duration fence) {
    StubSession s = new StubSession(log, pid, time, hb, fence);
    s.held(List.of(key));
    return s;
  }

  /** Makes {@link #fencingToken()} fail, as a session that breaks right after the grant does. */
  public StubSession failingToken(SQLException failure) {
    this.tokenFailure = failure;
    return this;
  }

  /**
   * What the real session does when a call on it fails with a session-lost SQLState: it tells the
   * owner, on the calling thread, with its I/O lock held.
   */
  public void loseSession(SQLException failure) {
    io.lock();
    try {
      listener.sessionEnded(LossReason.SESSION_LOST, failure);
    } finally {
      io.unlock();
    }
  }

  /** What an ownership proof that found keys missing reports. */
  void loseKeys(Set<LockKey> lost) {
    io.lock();
    try {
      keys.removeAll(lost);
      listener.keysLost(lost);
    } finally {
      io.unlock();
    }
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
  public boolean isOpen() {
    return open.get();
  }

  /** The keys it holds. */
  Set<LockKey> keys() {
    return Set.copyOf(keys);
  }

  @Override
  public SessionIo io() {
    return this;
  }

  /** Records keys as held (a grant outside {@link #tryLock}). */
  void held(Collection<LockKey> taken) {
    keys.addAll(taken);
  }

  @Override
  public Connection view(BooleanSupplier over) {
    throw new UnsupportedOperationException("a stub session has no connection");
  }

  @Override
  public <T> T call(SqlFunction<T> work) {
    throw new UnsupportedOperationException("a stub session has no connection");
  }

  /**
   * Every proof succeeds at once (the session was alive and held its keys then), unless the session
   * was {@link #silence() silenced}: then each proof waits, as one on a partitioned network does,
   * and proves nothing.
   */
  @Override
  public Set<LockKey> prove() {
    long start = time.nanoTime();
    proofTimes.add(start);
    if (silent) {
      if (time instanceof FakeTime) {
        ((FakeTime) time).advance(Duration.ofMillis(500));
      }
      return Set.of();
    }
    proofs.owned(start, true);
    return Set.of();
  }

  /** No round trip succeeds from now on (a partition): the deadline stops moving. */
  void silence() {
    silent = true;
  }

  /** What a statement of user code on the session does to the bookkeeping: touched, alive. */
  void statement() {
    io.lock();
    try {
      proofs.touched();
      if (!silent) {
        proofs.alive(time.nanoTime());
      }
    } finally {
      io.unlock();
    }
  }

  /** When each proof started, on the session's clock. */
  List<Long> proofTimes() {
    return proofTimes;
  }

  @Override
  public boolean canProveNow() {
    return true;
  }

  @Override
  public SessionIo.Evidence probe(long maxWaitNanos, boolean readSocket) {
    return open.get() ? SessionIo.Evidence.QUIET : SessionIo.Evidence.ENDED;
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
  public boolean awaitEvent(int millis) {
    return false; // cannot wait on a socket: the worker waits on its time source instead
  }

  @Override
  public boolean repairAutocommit() {
    return false;
  }

  @Override
  public FencingToken fencingToken(List<LockKey> announce) throws SQLException {
    if (tokenFailure != null) {
      throw tokenFailure;
    }
    return new FencingToken(1, 0, XID.incrementAndGet());
  }

  @Override
  public int preferredWaiting() {
    return 0;
  }

  @Override
  public List<LockKey> tryLock(List<LockKey> batch, int limit) {
    List<LockKey> taken = batch.subList(0, Math.min(limit, batch.size()));
    keys.addAll(taken);
    return List.copyOf(taken);
  }

  @Override
  public void unlock(List<LockKey> release, String... releasedNotices) {
    if (releasedNotices.length > 0) {
      log.add("notified " + releasedNotices.length + " released");
    }
    keys.removeAll(release);
    log.add("unlocked " + release.size());
  }

  @Override
  public void end(String... releasedNotices) {
    if (open.compareAndSet(true, false)) {
      if (releasedNotices.length > 0) {
        log.add("notified " + releasedNotices.length + " released, unlocked all");
      }
      log.add("released");
    }
  }

  @Override
  public void abort() {
    if (open.compareAndSet(true, false)) {
      abortedAt = time.nanoTime();
      log.add("aborted");
    }
  }

  /** When the session was aborted, or 0. */
  long abortedAt() {
    return abortedAt;
  }
}
