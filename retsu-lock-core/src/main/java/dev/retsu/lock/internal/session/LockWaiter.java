package dev.retsu.lock.internal.session;

import dev.retsu.lock.AdvisoryLockException;
import dev.retsu.lock.FencingToken;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.internal.TimeSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The standing session of a WAIT standby (and of {@code AdvisoryLock.acquire}): it blocks in {@code
 * pg_advisory_lock} under {@code lock_timeout}, so PostgreSQL grants the lock the moment the
 * holder's session ends. The session is opened like every session we own ({@link SessionOpener}:
 * the leader's server bounds and the marker from the start, a hot standby and a marked backend
 * refused), gets its own {@code statement_timeout} (a role's shorter one cannot cancel the wait),
 * its client socket the same keepalives as the server's side, and is never returned to a pool. Each
 * wait is one statement that first checks, like a POLL attempt, that the server is a primary and
 * that this backend does not already hold the key (a transaction-mode pooler shares backends; a
 * plain re-entrant lock there would make two leaders). Waits are long (minutes by default) because
 * each re-arm costs the server an ERROR line and a deadlock check; re-arming puts the waiter at the
 * back of PostgreSQL's queue. The session is made ready to wait by {@link WaitArming}. Thread-safe:
 * {@link #await()} from one thread, {@link #close()} from any.
 */
public final class LockWaiter implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(LockWaiter.class);

  /**
   * The longest wait for the grant's own {@code acquired} notice (it comes within a millisecond):
   * past it the previous term's end counts as not graceful.
   */
  private static final int OWN_NOTICE_MILLIS = 1000;

  private final SessionOpener.Spec spec;
  private final LockSession session;
  private final Duration waitTimeout;
  private final String originalLockTimeout;
  private final String originalStatementTimeout;
  private final boolean fullToken;
  private final boolean listens;
  private final String keyId;

  /** Whether the last notice about this key from another session was {@code released}. */
  private boolean lastReleased;

  /**
   * The pid of the candidates' session that held the key when the last wait began, or 0: only its
   * {@code released} notice counts (the waiting thread's alone).
   */
  private int holderAtWait;

  /** Whether to look, in the grant's statement, for a preferred candidate waiting behind. */
  private volatile boolean lookForPreferred;

  /** The pid of a preferred candidate's session waiting behind the last grant, or 0. */
  private volatile int preferredAtGrant;

  /** Whether the previous term ended gracefully, as the last grant showed (see {@link #open}). */
  private volatile boolean previousGraceful;

  /** Set once: by the grant (the session is the caller's) or by close (it is ended). */
  private final AtomicBoolean settled = new AtomicBoolean();

  /** Whether the last wait ended in lock_timeout (the waiting thread's alone). */
  private boolean timedOut;

  private LockWaiter(
      SessionOpener.Spec spec,
      LockSession session,
      Duration waitTimeout,
      String lockTimeout,
      String statementTimeout,
      boolean fullToken,
      boolean listens) {
    this.spec = spec;
    this.listens = listens;
    this.keyId = Notices.keyId(spec.key());
    this.session = session;
    this.waitTimeout = waitTimeout;
    this.originalLockTimeout = lockTimeout;
    this.originalStatementTimeout = statementTimeout;
    this.fullToken = fullToken;
  }

  /**
   * Opens the waiting session.
   *
   * @param spec how to open it
   * @param waitTimeout the longest single wait
   * @return the waiter
   * @throws AdvisoryLockException when it cannot be opened or is refused
   */
  public static LockWaiter open(SessionOpener.Spec spec, Duration waitTimeout) {
    return open(spec, waitTimeout, false);
  }

  /**
   * Opens the waiting session; with {@code listen} it LISTENs on {@value Notices#CHANNEL} before it
   * waits, so that a grant tells whether the previous term ended gracefully ({@link
   * #previousEndedGracefully}). A backend delivers notifications only when idle, right after the
   * grant's answer; the grant's own {@code acquired} notice comes after every notice committed
   * before it, so reading up to it sees the previous holder's {@code released} if there was one.
   *
   * @param spec how to open it
   * @param waitTimeout the longest single wait
   * @param listen whether to learn how the previous term ended
   * @return the waiter
   * @throws AdvisoryLockException when it cannot be opened or is refused
   */
  public static LockWaiter open(SessionOpener.Spec spec, Duration waitTimeout, boolean listen) {
    LockSession s = SessionOpener.open(spec);
    try {
      WaitArming.Armed armed = s.call(c -> WaitArming.arm(spec, c, waitTimeout, listen));
      return new LockWaiter(
          spec,
          s,
          waitTimeout,
          armed.lockTimeout(),
          armed.statementTimeout(),
          armed.fullToken(),
          listen);
    } catch (SQLException e) {
      s.abort();
      throw SessionOpener.failed(spec, "Opening a waiting session failed", e);
    } catch (RuntimeException e) {
      s.abort();
      throw e;
    }
  }

  /**
   * Waits up to {@code waitTimeout} for the lock.
   *
   * @return the session once granted, holding the key; empty when the wait timed out (call again to
   *     re-arm)
   * @throws dev.retsu.lock.UnsafeSessionException on a hot standby or a shared backend
   * @throws AdvisoryLockException if the session failed, was closed or the thread was interrupted
   *     (the session is ended; an interrupt stays set)
   */
  public Optional<LockSession> await() {
    Wait w;
    try {
      w = session.call(this::waitOnce);
    } catch (SQLException e) {
      if ("55P03".equals(e.getSQLState()) && session.isOpen()) {
        timedOut = true;
        return Optional.empty(); // lock_timeout: nobody released it yet; re-arm
      }
      session.abort();
      throw SessionOpener.failed(spec, "Waiting for the lock failed", e);
    }
    return granted(w);
  }

  /**
   * What one wait returned; once granted also the token and when, on this client's clock, the
   * server was at most taking it ({@code proofStart}).
   */
  private record Wait(
      int pid,
      boolean inRecovery,
      boolean alreadyHeld,
      boolean locked,
      FencingToken token,
      long proofStart) {}

  /**
   * One wait on the raw session. Once granted, the same statement restored the timeouts and took
   * the durable token, so nothing more runs here (nothing more is linked or looked up at the
   * grant). The liveness that statement proves starts, on this client's clock, no later than the
   * server took the token: its send time plus the time the server says it spent before the token
   * (on the server's clock), capped by the answer's arrival.
   */
  private Wait waitOnce(Connection c) throws SQLException {
    LockKey key = spec.key();
    c.setNetworkTimeout(
        SessionTerminator.DIRECT, (int) (waitTimeout.toMillis() + spec.roundTripMillis()));
    Wait w;
    TimeSource time = spec.time();
    if (listens) {
      notices(c, 0, -1, null); // what arrived while the session was idle between waits
    }
    String name = Notices.candidateName(spec.applicationName());
    try (PreparedStatement ps = c.prepareStatement(SessionSql.waitLock(key, fullToken))) {
      ps.setString(1, Notices.termPrefix(name));
      ps.setString(2, keyId);
      ps.setString(3, spec.candidateId());
      ps.setBoolean(4, lookForPreferred);
      ps.setString(5, originalLockTimeout);
      ps.setString(6, originalStatementTimeout);
      int next = 7;
      if (!fullToken) {
        ps.setString(next++, name); // the fallback's flushed message
      }
      KeySql.bindLocks(ps, KeySql.bindLocks(ps, KeySql.bindArguments(ps, next, key), key), key);
      long sent = time.nanoTime();
      try (ResultSet rs = ps.executeQuery()) {
        long received = time.nanoTime();
        rs.next();
        boolean locked = rs.getBoolean(4);
        FencingToken token = locked ? TokenMode.read(rs, 10, 8, 9) : null;
        long before = locked ? (long) (rs.getDouble(11) * 1e9) : 0;
        long proofStart = sent + Math.max(0, Math.min(before, received - sent));
        w = new Wait(rs.getInt(1), rs.getBoolean(2), rs.getBoolean(3), locked, token, proofStart);
        holderAtWait = rs.getInt(12);
        preferredAtGrant = locked ? rs.getInt(15) : 0;
      }
    }
    if (w.locked()) {
      c.setNetworkTimeout(SessionTerminator.DIRECT, 0);
      if (listens) {
        previousGraceful =
            notices(c, Math.min(OWN_NOTICE_MILLIS, spec.roundTripMillis()), w.pid(), w.token());
        lastReleased = false;
      }
    }
    return w;
  }

  /**
   * Reads the notices that arrived: with {@code ownPid}, waits up to {@code millis} for this
   * session's own {@code acquired} notice of {@code token}, which comes after every notice
   * committed before the grant. Returns whether the last notice about this key from another
   * session, before the own one, was {@code released} by the session that held the key when the
   * wait began: the previous term ended gracefully.
   *
   * <p>A notice is a hint, and any role can send one (DESIGN invariant 9). The server attaches the
   * sender's backend pid to each notification: a notice counts only when that pid is the one it
   * names (a session speaks only for itself), and a {@code released} counts only from the session
   * this waiter's statement saw holding the key, among the candidates' role, when the wait began.
   * Anything else can only make the end look not graceful, which costs the lock-delay, never an
   * overlap.
   */
  private boolean notices(Connection c, int millis, int ownPid, FencingToken token)
      throws SQLException {
    long deadline = System.nanoTime() + millis * 1_000_000L;
    while (true) {
      long left = deadline - System.nanoTime();
      if (ownPid >= 0 && left <= 0) {
        return false; // the own notice did not come: cannot tell
      }
      List<PgSession.Note> notes =
          PgSession.notes(c, ownPid < 0 ? 0 : (int) Math.max(1, left / 1_000_000L));
      if (notes == null) {
        return false;
      }
      for (PgSession.Note n : notes) {
        if (!Notices.CHANNEL.equals(n.channel())) {
          continue;
        }
        Notices.Notice notice = Notices.parse(n.payload()).orElse(null);
        if (notice == null || !notice.keyId().equals(keyId) || notice.pid() != n.pid()) {
          continue;
        }
        if (n.pid() == ownPid && notice.token().equals(token)) {
          return lastReleased;
        }
        lastReleased =
            notice.kind() == Notices.Kind.RELEASED && holderAtWait != 0 && n.pid() == holderAtWait;
      }
      if (ownPid < 0) {
        return lastReleased;
      }
    }
  }

  /**
   * Whether the term of the last grant follows one that ended gracefully: a {@code released} notice
   * for this key came before the grant, and no {@code acquired} after it. False when this waiter
   * does not listen, or the grant's own notice did not arrive within the round-trip timeout.
   *
   * @return true after a graceful hand-over
   */
  public boolean previousEndedGracefully() {
    return previousGraceful;
  }

  /**
   * Makes each grant look for a preferred candidate's session waiting behind it (a standby that is
   * not preferred: PostgreSQL grants waiters in the order they queued, so a WAIT standby that
   * queued before a preferred one is granted first, and then hands over at once).
   */
  public void lookForPreferred() {
    lookForPreferred = true;
  }

  /**
   * The pid of a preferred candidate's session that waited behind the last grant, or 0 ({@link
   * #lookForPreferred}).
   *
   * @return the pid
   */
  public int preferredWaitingAtGrant() {
    return preferredAtGrant;
  }

  private Optional<LockSession> granted(Wait w) {
    int pid = w.pid();
    boolean inRecovery = w.inRecovery();
    boolean alreadyHeld = w.alreadyHeld();
    boolean locked = w.locked();
    boolean afterTimeout = timedOut;
    timedOut = false;
    if (pid != session.id().pid()) {
      session.abort(); // never a statement: the backend may be another client's
      throw Refusals.pidChanged(session.id(), pid);
    }
    if (alreadyHeld && afterTimeout && !inRecovery) {
      // PostgreSQL can grant the lock in the instant lock_timeout fires: the statement fails with
      // 55P03 and the session keeps the lock. Not a shared backend, but not provably ours either,
      // so end the session (which frees the lock if it is ours) and wait again on a new one.
      session.abort();
      throw new AdvisoryLockException(
          "The lock was granted as the previous wait timed out; the waiting session was ended,"
              + " which releases it, and the standby waits again on a new one",
          spec.key(),
          spec.candidateId(),
          null);
    }
    if (inRecovery || alreadyHeld || !locked) {
      session.abort();
      if (inRecovery) {
        throw Refusals.hotStandby(spec.key(), spec.candidateId());
      }
      if (alreadyHeld) {
        throw Refusals.alreadyHeld(pid, session.id().route(), spec.key(), spec.candidateId());
      }
      throw new AdvisoryLockException(
          "The wait returned without the lock", spec.key(), spec.candidateId(), null);
    }
    if (!settled.compareAndSet(false, true)) {
      session.end(); // closed as the grant arrived: ending the session releases the lock
      throw new AdvisoryLockException(
          "The waiter was closed", spec.key(), spec.candidateId(), null);
    }
    if (Thread.currentThread().isInterrupted()) {
      session.end();
      throw new AdvisoryLockException(
          "Interrupted when the lock was granted; the session was ended",
          spec.key(),
          spec.candidateId(),
          new InterruptedException());
    }
    // The granting statement read this backend's pid and took the key: an ownership proof, whose
    // liveness runs from when the server took the token, not from when its answer arrived.
    session.proofs().owned(w.proofStart(), false);
    if (session.proofs().fence().expired()) {
      // The answer was held up on its way (a partition that healed, a client paused) past the
      // self-fencing deadline: the server may have ended the session meanwhile (its
      // idle_session_timeout runs from the grant, the idle backend's keepalives see nobody) and
      // granted the key to another candidate. Such a grant starts no term.
      session.abort(); // never a statement on a link that was silent that long
      throw new AdvisoryLockException(
          "The grant arrived "
              + Duration.ofNanos(spec.time().nanoTime() - w.proofStart())
              + " after the server took the lock, past the self-fencing deadline "
              + session.proofs().fence().window()
              + ": the server may have ended the session and granted the lock to another; the"
              + " session was ended and no term started",
          spec.key(),
          spec.candidateId(),
          null);
    }
    session.held(List.of(spec.key()));
    session.tokenTaken(w.token());
    LOG.debug("{} Lock granted to waiting backend pid {}", spec.context(), pid);
    return Optional.of(session);
  }

  /** The waiting session (tests read its socket options). */
  public Session session() {
    return session;
  }

  /**
   * Ends the waiting session (aborting a wait in progress), unless it was granted: a granted
   * session is the caller's. Idempotent; never throws.
   */
  @Override
  public void close() {
    if (settled.compareAndSet(false, true)) {
      session.end();
    }
  }
}
