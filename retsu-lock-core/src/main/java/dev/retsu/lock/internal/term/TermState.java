package dev.retsu.lock.internal.term;

import dev.retsu.lock.LeaderContext;
import dev.retsu.lock.LeadershipLostException;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.SqlFunction;
import dev.retsu.lock.Term;
import dev.retsu.lock.internal.session.PgSession;
import dev.retsu.lock.internal.session.ProofException;
import dev.retsu.lock.internal.session.SelfFence;
import dev.retsu.lock.internal.session.Session;
import dev.retsu.lock.internal.session.SessionIo;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One key's term, for every recipe (invariant 5, acting side): the checks a leader runs before an
 * effect, and the claim that ends the term once. The term turns invalid the moment it is claimed
 * (its own end, or its session's), and from then on {@link #ensureLeader()} fails and every call
 * through {@link #connection()} fails with SQLState 08003. What follows a claim (the task
 * interrupted and awaited, {@code onLost}, the release) is its {@link SessionWorker}'s.
 * Thread-safe.
 */
public final class TermState implements LeaderContext {

  private final Term term;
  private final Session session;
  private final SessionWorker worker;

  /**
   * The end, published in one step: whoever sees the term ended sees why, so no thread can tell
   * listeners of an end whose reason another thread has not written yet.
   */
  private final AtomicReference<End> end = new AtomicReference<>();

  private final AtomicBoolean finishing = new AtomicBoolean();
  private volatile Connection view;
  private volatile boolean announced;
  private volatile boolean lostDelivered;

  /** Whether the worker announces the term at its first refresh (a loop's lock-delay). */
  private volatile boolean announceAtFirstRefresh;

  /** When the next refresh is due; the worker's alone. */
  private long nextRefresh;

  /** Refreshes that succeeded; the worker's alone. */
  private int refreshes;

  TermState(Term term, Session session, SessionWorker worker) {
    this.term = term;
    this.session = session;
    this.worker = worker;
  }

  @Override
  public Term term() {
    return term;
  }

  @Override
  public Connection connection() {
    Connection v = view;
    if (v == null) {
      v = session.view(this::over);
      view = v;
    }
    return v;
  }

  @Override
  public <T> T withConnection(SqlFunction<T> work) throws SQLException {
    Objects.requireNonNull(work, "work");
    Connection v = connection();
    return session.call(c -> work.apply(v));
  }

  @Override
  public boolean isLeader() {
    return !over() && !fence().expired();
  }

  @Override
  public void ensureLeader() {
    checkLocally();
    if (session.proofs().ownershipDue() || !PgSession.canProbe()) {
      proveLeader();
      return;
    }
    // A call in progress on the session (a heartbeat, or a statement on another thread) may be
    // reading a FATAL right now: wait for it, but never past the deadline. No read of the socket
    // here where its pending bytes can be counted: a FATAL is among them; a bare EOF or reset is
    // read for by the worker's socket wait, the task's statements and the watchdog.
    SessionIo.Evidence evidence = session.io().probe(fence().nanosLeft(), false);
    if (Thread.currentThread() != worker.thread()) {
      session.proofs().foreignCall(); // the worker leaves the socket to this thread for a while
    }
    if (evidence == null) {
      worker.selfFence(); // the session stayed busy until the deadline: no evidence in time
    } else if (evidence == SessionIo.Evidence.PENDING) {
      proveLeader(); // something is pending that only a round trip can read
      return;
    } else {
      worker.evidence(evidence);
    }
    checkLocally();
  }

  @Override
  public void proveLeader() {
    checkLocally();
    try {
      session.prove();
    } catch (ProofException e) {
      // reported to the worker, which ended the session's terms
    }
    checkLocally();
  }

  /** Fails unless the term is live and its session inside its deadline; no I/O. */
  private void checkLocally() {
    if (end.get() == null && fence().expired()) {
      worker.selfFence();
    }
    if (over()) {
      throw lost();
    }
  }

  private SelfFence fence() {
    return session.proofs().fence();
  }

  /** The one "term N is over" failure. */
  LeadershipLostException lost() {
    End e = end.get();
    return new LeadershipLostException(
        e != null ? e.reason : LossReason.CLOSED,
        "Term " + term.number() + " is over",
        term.key(),
        term.candidateId(),
        e != null ? e.cause : null);
  }

  /** Whether the holder may no longer act or use the session. */
  boolean over() {
    return end.get() != null || !session.isOpen();
  }

  /**
   * Marks the term over (invalid at once); true for the one caller that wins.
   *
   * @param why the reason
   * @param error the cause, may be null
   * @return true if this call ended it
   */
  boolean claim(LossReason why, Throwable error) {
    return end.compareAndSet(null, new End(Objects.requireNonNull(why, "why"), error));
  }

  /** Why and through what a term ended, written together. */
  private record End(LossReason reason, Throwable cause) {}

  /** True for the one caller that may tell listeners and release; once per term. */
  boolean startFinishing() {
    return finishing.compareAndSet(false, true);
  }

  /**
   * Whether the term has ended.
   *
   * @return true once claimed
   */
  public boolean ended() {
    return end.get() != null;
  }

  /**
   * Announced ({@code onAcquired} delivered) and not ended: what a recipe reports as held.
   *
   * @return true while held
   */
  public boolean isHeld() {
    return announced && !over();
  }

  /**
   * Why the term ended, once it has.
   *
   * @return the reason, or null
   */
  public LossReason reason() {
    End e = end.get();
    return e == null ? null : e.reason;
  }

  /**
   * What ended it, once it has.
   *
   * @return the cause, or null
   */
  public Throwable cause() {
    End e = end.get();
    return e == null ? null : e.cause;
  }

  /**
   * How many refreshes succeeded.
   *
   * @return the count
   */
  public int refreshes() {
    return refreshes;
  }

  /** Counts a refresh that succeeded; the worker's thread alone. */
  void refreshed() {
    refreshes++;
  }

  /** {@code onAcquired} was delivered ({@link TermListeners}). */
  boolean announced() {
    return announced;
  }

  /** Marks {@code onAcquired} delivered; under the listeners' lock. */
  void markAnnounced() {
    announced = true;
  }

  /** {@code onLost} was delivered ({@link TermListeners}). */
  boolean lostDelivered() {
    return lostDelivered;
  }

  /** Marks {@code onLost} delivered; under the listeners' lock. */
  void markLostDelivered() {
    lostDelivered = true;
  }

  /** Whether the worker announces the term at its first refresh (a loop's lock-delay). */
  boolean announceAtFirstRefresh() {
    return announceAtFirstRefresh;
  }

  /** Makes the worker announce the term at its first refresh instead of now. */
  void deferAnnouncement() {
    announceAtFirstRefresh = true;
  }

  /** When the next refresh is due, on the session's clock; the worker's alone. */
  long nextRefresh() {
    return nextRefresh;
  }

  /** Sets when the next refresh is due; the worker's thread alone. */
  void nextRefreshAt(long nanos) {
    nextRefresh = nanos;
  }

  /** The session the term's key is held on. */
  public Session session() {
    return session;
  }

  @Override
  public String toString() {
    return "Term"
        + session.id().context()
        + "{"
        + term.number()
        + (end.get() != null ? ", ended" : "")
        + "}";
  }
}
