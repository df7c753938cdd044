package dev.retsu.lock.internal.group;

import dev.retsu.lock.AdvisoryLockException;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.internal.Diagnostics;
import dev.retsu.lock.internal.session.Session;
import dev.retsu.lock.internal.session.SessionOpener;
import dev.retsu.lock.internal.term.ReleasePolicy;
import dev.retsu.lock.internal.term.SessionWatchdog;
import dev.retsu.lock.internal.term.SessionWorker;
import dev.retsu.lock.internal.term.TermState;
import dev.retsu.lock.internal.term.Wakeup;
import java.sql.SQLException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One of a group member's sessions and its thread ({@code retsu-lock-group-<name>-s<i>}, daemon):
 * it opens a session, runs the shared {@link SessionWorker} on it until the session ends, and opens
 * a new one after {@code reconnectInterval}. The group's part is here: the first session holds the
 * member's membership slot, and the jobs the coordinator posts (try keys in batches with one
 * fencing token per batch, release keys, read the membership) run on the worker between refreshes.
 * Thread-safe: jobs from any thread.
 */
public final class SessionSlot implements Runnable, SessionWorker.Owner, Slot {

  private static final Logger LOG = LoggerFactory.getLogger(SessionSlot.class);

  /** What the group hears from its slots. */
  public interface Events {
    /** A session was opened. */
    void opened(SessionSlot slot);

    /** A session ended and its terms were finished. */
    void ended(SessionSlot slot);

    /** A session could not be opened. */
    void failed(SessionSlot slot, AdvisoryLockException e);
  }

  private final GroupCore core;
  private final int index;
  private final SessionOpener.Spec spec;
  private final SessionWatchdog watchdog;
  private final Events events;
  private final Wakeup wakeup;
  private volatile SessionWorker worker;
  private volatile int membershipSlot = -1;
  private volatile Thread thread;
  private volatile long nextOpen;

  /** Completes when the first session opened, exceptionally when it could not. */
  public final CompletableFuture<Void> firstOpen = new CompletableFuture<>();

  /**
   * Slot {@code index} of a group member.
   *
   * @param core the group's shared state
   * @param index 0 for the session that holds the membership slot
   * @param watchdog the group's watchdog
   * @param events what the group hears
   */
  public SessionSlot(GroupCore core, int index, SessionWatchdog watchdog, Events events) {
    this.core = core;
    this.index = index;
    SessionOpener.Spec g = core.settings().spec();
    String context =
        "[group=" + core.settings().name() + ", candidate=" + g.candidateId() + ", s" + index + "]";
    this.spec =
        new SessionOpener.Spec(
            g.dataSource(),
            g.key(),
            g.candidateId(),
            context,
            g.applicationName(),
            g.settings(),
            g.roundTripTimeout(),
            g.heartbeat(),
            g.selfFenceAfter(),
            g.time());
    this.watchdog = watchdog;
    this.events = events;
    this.wakeup = new Wakeup(g.time(), core::closing);
  }

  /** Starts the slot's thread. */
  public void start() {
    Thread t = new Thread(this, "retsu-lock-group-" + core.settings().name() + "-s" + index);
    t.setDaemon(true);
    thread = t;
    t.start();
  }

  /** The slot's thread. */
  public Thread thread() {
    return thread;
  }

  /** The slot's position; 0 holds the membership. */
  @Override
  public int index() {
    return index;
  }

  /** The live worker, or null between sessions. */
  public SessionWorker worker() {
    SessionWorker w = worker;
    return w == null || w.ended() ? null : w;
  }

  @Override
  public boolean live() {
    return worker() != null;
  }

  @Override
  public boolean runs(TermState term) {
    SessionWorker w = worker();
    return w != null && w.terms().get(term.term().key()) == term;
  }

  /** Keys held on the live session. */
  @Override
  public int heldCount() {
    SessionWorker w = worker();
    return w == null ? 0 : w.terms().size();
  }

  /** This member's membership slot, or -1. */
  @Override
  public int membershipSlot() {
    return membershipSlot;
  }

  @Override
  public void run() {
    try {
      while (!core.closing()) {
        long now = spec.time().nanoTime();
        if (now - nextOpen < 0) {
          wakeup.await(nextOpen - now, () -> false);
          continue;
        }
        SessionWorker w = open();
        if (w != null) {
          worker = w;
          events.opened(this);
          w.run(core.task());
          worker = null;
          membershipSlot = -1;
          events.ended(this);
        }
        nextOpen = spec.time().nanoTime() + core.settings().reconnectInterval().toNanos();
      }
    } finally {
      firstOpen.complete(null);
    }
  }

  private SessionWorker open() {
    Session s;
    try {
      s = SessionOpener.open(spec);
    } catch (AdvisoryLockException e) {
      openFailed(e);
      return null;
    }
    try {
      if (index == 0) {
        int slot = core.membership().take(s);
        if (slot < 0) {
          throw new AdvisoryLockException(
              "The group already has "
                  + Membership.SLOTS
                  + " members, the most one group can have; this member cannot join "
                  + spec.context(),
              spec.key(),
              spec.candidateId(),
              null);
        }
        membershipSlot = slot;
      }
    } catch (SQLException | AdvisoryLockException e) {
      s.end();
      openFailed(
          e instanceof AdvisoryLockException
              ? (AdvisoryLockException) e
              : SessionOpener.failed(spec, "Taking a membership slot failed", (SQLException) e));
      return null;
    }
    SessionWorker w =
        new SessionWorker(
            s,
            core.settings().term(),
            core.listeners(),
            ReleasePolicy.UNLOCK_KEY,
            this,
            core::closing);
    watchdog.watch(w);
    LOG.info(
        "{} Session opened on backend pid {} in database {}",
        spec.context(),
        s.id().pid(),
        s.id().database());
    firstOpen.complete(null);
    return w;
  }

  private void openFailed(AdvisoryLockException e) {
    if (!firstOpen.isDone()) {
      firstOpen.completeExceptionally(e);
    }
    events.failed(this, e);
  }

  @Override
  public void termEnded(TermState t) {
    core.termEnded(t);
  }

  // ---- jobs, run on the worker's thread between refreshes ----

  /**
   * Posts {@code work} to the live worker, which it is given: the one worker read once here, so a
   * session that ends or opens meanwhile cannot hand the work another (or no) worker.
   */
  private <T> CompletableFuture<T> job(Function<SessionWorker, T> work, T skipped) {
    CompletableFuture<T> done = new CompletableFuture<>();
    SessionWorker w = worker();
    if (w == null) {
      done.complete(skipped);
      return done;
    }
    w.post(
        new SessionWorker.Job() {
          @Override
          public void run() {
            done.complete(w.ended() ? skipped : work.apply(w));
          }

          @Override
          public void skip() {
            done.complete(skipped);
          }
        });
    return done;
  }

  /** Tries keys on this session; completes with the keys whose terms started. */
  @Override
  public CompletableFuture<List<LockKey>> tryKeys(List<LockKey> keys, int limit) {
    return job(w -> BatchTerms.start(core, spec, w, keys, limit), List.of());
  }

  /** Releases keys gracefully (their work stopped, onLost, one unlock); completes with how many. */
  @Override
  public CompletableFuture<Integer> release(List<LockKey> keys) {
    return release(keys, LossReason.CLOSED);
  }

  /** Releases keys gracefully for {@code why}; completes with how many. */
  public CompletableFuture<Integer> release(List<LockKey> keys, LossReason why) {
    return job(
        w -> {
          int n = 0;
          for (LockKey k : keys) {
            TermState t = w.terms().get(k);
            if (t != null && !t.ended()) {
              w.endTerm(t, why, null);
              n++;
            }
          }
          w.finishNow();
          return n;
        },
        0);
  }

  /** Reads the group's members (slot 0): slots ascending; null when the session is gone. */
  @Override
  public CompletableFuture<long[]> members() {
    return job(
        w -> {
          try {
            if (membershipSlot < 0) {
              membershipSlot = core.membership().take(w.session());
            }
            return core.membership().read(w.session(), membershipSlot);
          } catch (SQLException e) {
            if (Diagnostics.isSessionLost(e.getSQLState())) {
              w.endSession(LossReason.SESSION_LOST, e, false);
            } else {
              LOG.warn("{} Reading the group's members failed: {}", spec.context(), e.toString());
            }
            return null;
          }
        },
        null);
  }
}
