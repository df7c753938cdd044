package dev.retsu.lock;

import dev.retsu.lock.internal.PgSession;
import dev.retsu.lock.internal.SessionGuard;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One key's term inside a {@link LeaderGroup}: the acting-leader checks of one key, on the group
 * session that holds it. The term turns invalid at once when it ends (its own release, a refresh
 * failure or timeout, a proof that found the key missing), or when its session ends or passes its
 * self-fencing deadline; from then on {@link #ensureLeader()} fails and every call through {@link
 * #connection()} fails with SQLState 08003. Thread-safe.
 */
final class KeyTerm implements LeaderContext {

  private final Term term;
  private final GroupSession.Live live;
  private final AtomicBoolean ended = new AtomicBoolean();
  private volatile LossReason reason;
  private volatile Throwable cause;
  private volatile Connection view;
  volatile boolean announced;
  volatile boolean lostDelivered;

  /** When the next refresh is due; the session's worker only. */
  long nextRefresh;

  KeyTerm(Term term, GroupSession.Live live) {
    this.term = term;
    this.live = live;
  }

  GroupSession.Live live() {
    return live;
  }

  LockKey key() {
    return term.key();
  }

  @Override
  public Term term() {
    return term;
  }

  @Override
  public Connection connection() {
    Connection v = view;
    if (v == null) {
      v = SessionGuard.guard(live.connection(), new Hooks(), live.context(term.key()));
      view = v;
    }
    return v;
  }

  @Override
  public <T> T withConnection(SqlFunction<T> work) throws SQLException {
    Objects.requireNonNull(work, "work");
    Connection v = connection();
    live.io().lock();
    try {
      if (ended.get() || live.ended()) {
        throw closed();
      }
      return work.apply(v);
    } finally {
      live.io().unlock();
    }
  }

  @Override
  public boolean isLeader() {
    return !ended.get() && !live.ended() && !live.fence().expired();
  }

  @Override
  public void ensureLeader() {
    checkLocally();
    if (live.unlockSuspected() || !PgSession.canProbe()) {
      proveLeader();
      return;
    }
    PgSession.Evidence evidence = live.probe(live.fence().nanosLeft());
    if (evidence == null) {
      live.selfFence();
      throw lost();
    }
    if (evidence == PgSession.Evidence.ENDED) {
      live.sessionLost(
          new SQLException("The server ended the session (seen on its socket)", "08006"));
    } else if (evidence != PgSession.Evidence.QUIET) {
      proveLeader();
      return;
    }
    checkLocally();
  }

  @Override
  public void proveLeader() {
    checkLocally();
    live.prove();
    checkLocally();
  }

  /** Fails unless the term is live and its session inside its deadline; no I/O. */
  private void checkLocally() {
    if (!ended.get() && !live.ended() && live.fence().expired()) {
      live.selfFence();
    }
    if (ended.get() || live.ended()) {
      throw lost();
    }
  }

  private LeadershipLostException lost() {
    LossReason why = reason != null ? reason : live.reason();
    return new LeadershipLostException(
        why != null ? why : LossReason.CLOSED,
        "Term " + term.number() + " of this key is over",
        term.key(),
        term.candidateId(),
        cause != null ? cause : live.cause());
  }

  private SQLException closed() {
    return new SQLException("The term of this key is over " + live.context(term.key()), "08003");
  }

  boolean ended() {
    return ended.get();
  }

  /** Announced and not ended: what the group reports as held. */
  boolean isHeld() {
    return announced && !ended.get() && !live.ended();
  }

  LossReason reason() {
    return reason;
  }

  Throwable cause() {
    return cause;
  }

  /** Marks the term over (invalid at once); true for the one caller that wins. */
  boolean claim(LossReason why, Throwable error) {
    if (!ended.compareAndSet(false, true)) {
      return false;
    }
    reason = why;
    cause = error;
    return true;
  }

  /** Routes this key's guarded view through the session's I/O lock and its proof bookkeeping. */
  private final class Hooks implements SessionGuard.Hooks {
    @Override
    public void enter() throws SQLException {
      live.io().lock();
      if (ended.get() || live.ended()) {
        live.io().unlock();
        throw closed();
      }
      live.touch();
    }

    @Override
    public void exit(long startNanos, boolean roundTrip, SQLException failure) {
      try {
        if (failure != null && Diagnostics.isSessionLost(failure.getSQLState())) {
          live.sessionLost(failure);
        } else if (failure == null && roundTrip) {
          live.fence().proved(startNanos);
        }
      } finally {
        live.io().unlock();
      }
    }

    @Override
    public void sql(String sql) {
      String s = sql.toLowerCase(Locale.ROOT);
      if (s.contains("unlock") || s.contains("discard") || s.contains("reset")) {
        live.suspectUnlock();
      }
    }
  }

  @Override
  public String toString() {
    return "KeyTerm"
        + live.context(term.key())
        + "{"
        + term.number()
        + (ended.get() ? ", ended" : "")
        + "}";
  }
}
