package dev.retsu.lock.internal.loop;

import dev.retsu.lock.AdvisoryLockException;
import dev.retsu.lock.FailurePolicy;
import dev.retsu.lock.LeadershipLostException;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.TakeoverMode;
import dev.retsu.lock.Term;
import dev.retsu.lock.UnsafeSessionException;
import dev.retsu.lock.internal.session.LockSession;
import dev.retsu.lock.internal.session.LockWaiter;
import dev.retsu.lock.internal.session.Session;
import dev.retsu.lock.internal.session.SessionOpener;
import dev.retsu.lock.internal.term.TermState;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.DoubleSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A candidate that does not lead: one attempt at a time, in {@link TakeoverMode#POLL} (borrow a
 * connection, try the lock, give the connection back holding nothing) or {@link TakeoverMode#WAIT}
 * (block on the standing waiting session, opened at first use), and how long to wait after each:
 * after the lock was held elsewhere, after a failure, and after a term ended, where the {@link
 * FailurePolicy} decides between ending the loop (EXIT) and backing off (STEP_DOWN). It never holds
 * a pooled connection between attempts; in WAIT it holds only its own waiting session, which {@link
 * #close()} aborts at once. Thread-safe: attempts and decisions from the loop's thread, {@link
 * #close()} from any.
 */
public final class Standby implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(Standby.class);

  private final LoopSettings settings;
  private final DoubleSupplier random;
  private final Supplier<Optional<Session>> poll;
  private volatile LockWaiter waiter;
  private volatile boolean closed;
  private volatile boolean reached;
  private volatile boolean graceful;
  private volatile int preferredAtGrant;
  private volatile boolean waiting;
  private int failedTerms;

  /**
   * The standby of a loop.
   *
   * @param settings the loop's settings
   */
  public Standby(LoopSettings settings) {
    this(
        settings,
        () -> ThreadLocalRandom.current().nextDouble(),
        () -> SessionOpener.tryLock(settings.spec()).map(s -> (Session) s));
  }

  /**
   * A standby with its own randomness and POLL attempts: unit tests pass a stub for the database.
   */
  public Standby(LoopSettings settings, DoubleSupplier random, Supplier<Optional<Session>> poll) {
    this.settings = settings;
    this.random = random;
    this.poll = poll;
  }

  /**
   * One attempt.
   *
   * @return the lease if the lock was taken, empty if it is held elsewhere (in WAIT: the wait timed
   *     out)
   * @throws AdvisoryLockException if the attempt failed (the waiting session is then gone)
   */
  public Optional<Session> attempt() {
    graceful = false;
    preferredAtGrant = 0;
    if (settings.takeover() == TakeoverMode.POLL) {
      Optional<Session> lease = poll.get();
      reached = true;
      if (lease.isEmpty()) {
        WarmUp.leaderPath(); // a standby now: load what a takeover will run
      }
      return lease;
    }
    LockWaiter w = waiter;
    if (w == null) {
      w =
          LockWaiter.open(
              settings.waitSpec(), settings.waitTimeout(), !settings.takeoverDelay().isZero());
      reached = true;
      if (!settings.preferred()) {
        w.lookForPreferred();
      }
      waiter = w;
      if (closed) {
        w.close();
        waiter = null;
        return Optional.empty();
      }
      WarmUp.leaderPath(); // before the wait whose grant must be fast
    }
    try {
      Optional<LockSession> granted;
      waiting = true;
      try {
        granted = w.await();
      } finally {
        waiting = false;
      }
      if (granted.isEmpty()) {
        return Optional.empty();
      }
      waiter = null; // its session now belongs to the term
      graceful = w.previousEndedGracefully();
      preferredAtGrant = w.preferredWaitingAtGrant();
      return Optional.of(granted.get());
    } catch (AdvisoryLockException e) {
      waiter = null; // the waiter ended its session
      throw e;
    }
  }

  /**
   * Whether a WAIT attempt is blocked in its wait right now: the lock is held elsewhere, and this
   * standby is queued for it.
   *
   * @return true during a WAIT standby's wait
   */
  public boolean isWaiting() {
    return waiting;
  }

  /**
   * Whether the term the last attempt won follows one that ended gracefully, as far as this standby
   * can tell: only a WAIT standby that listened ({@code takeoverDelay}) can.
   *
   * @return true after a graceful hand-over
   */
  public boolean previousEndedGracefully() {
    return graceful;
  }

  /**
   * The pid of a preferred candidate's session that waited behind the last grant (a WAIT standby
   * that is not preferred), or 0: the term then hands over before any work.
   *
   * @return the pid
   */
  public int preferredWaitingAtGrant() {
    return preferredAtGrant;
  }

  /**
   * After an attempt failed, or the term it won could not start ({@code leaseTaken}: its fencing
   * token failed and the lock was released): the wait before the next attempt, or the failure
   * thrown when it ends the loop. Until an attempt has reached the database a failure is taken for
   * a configuration error (wrong URL, no such database) and fails fast, unless the loop was built
   * with {@code failFast(false)}; after it, a failure is an outage to ride out. A term that could
   * not start ends the loop under EXIT.
   *
   * @throws AdvisoryLockException {@code failure}, when it ends the loop
   */
  public Duration afterFailure(AdvisoryLockException failure, boolean leaseTaken) {
    if ((!reached && settings.term().failFast()) || fatal(failure) || (leaseTaken && exits())) {
      throw failure;
    }
    if (leaseTaken) {
      LOG.warn("{} Could not start a term: {}", settings.context(), failure.getMessage());
    } else {
      LOG.warn(
          "{} Attempt failed, retrying in {}: {}",
          settings.context(),
          settings.retryInterval(),
          failure.getMessage());
    }
    return settings.retryInterval();
  }

  /**
   * After a term ended other than by {@code close()}: under EXIT (and always after a transaction
   * pooler was detected) the loop ends; under STEP_DOWN the wait before contending again, the
   * {@link #backoff} of the failed terms in a row (a term that refreshed at least once starts the
   * count again).
   *
   * @throws LeadershipLostException when the loop ends: the term's reason, its cause kept
   */
  public Duration afterTerm(TermState term) {
    LossReason reason = term.reason();
    if (exits() || reason == LossReason.POOLER_DETECTED) {
      Term t = term.term();
      throw new LeadershipLostException(
          reason, "Term " + t.number() + " ended", t.key(), t.candidateId(), term.cause());
    }
    failedTerms = term.refreshes() > 0 ? 1 : failedTerms + 1;
    Duration backoff = backoff(failedTerms);
    LOG.info("{} Stepping down; contending again in {}", settings.context(), backoff);
    return backoff;
  }

  private boolean exits() {
    return settings.failurePolicy() == FailurePolicy.EXIT;
  }

  /**
   * Whether a failure ends the loop whatever the policy: any unsafe session under EXIT, and a
   * transaction-mode pooler always (a configuration error that retrying cannot fix, and every retry
   * would take the lock on a shared backend). A hot standby under STEP_DOWN is retried: a failover
   * may promote it.
   */
  private boolean fatal(AdvisoryLockException e) {
    if (!(e instanceof UnsafeSessionException)) {
      return false;
    }
    return exits() || ((UnsafeSessionException) e).reason() == LossReason.POOLER_DETECTED;
  }

  /** After an attempt found the lock held elsewhere: POLL waits a jittered retry interval. */
  public Duration afterHeldElsewhere() {
    return settings.takeover() == TakeoverMode.WAIT ? Duration.ZERO : jittered();
  }

  /**
   * retryInterval × (1 − retryJitter × u), u uniform in [0, 1): jitter only shortens the wait, so
   * retryInterval stays the longest a free lock waits for a POLL standby.
   */
  public Duration jittered() {
    double jitter = settings.retryJitter();
    Duration interval = settings.retryInterval();
    if (jitter == 0) {
      return interval;
    }
    double factor = 1 - random.getAsDouble() * jitter;
    return Duration.ofNanos((long) (interval.toNanos() * factor));
  }

  /**
   * The wait after the {@code failedTerms}-th failed term in a row under STEP_DOWN: retryInterval,
   * doubling, at most maxBackoff.
   */
  public Duration backoff(int failedTerms) {
    Duration d = settings.retryInterval();
    Duration max = settings.maxBackoff();
    for (int i = 1; i < failedTerms && d.compareTo(max) < 0; i++) {
      d = d.multipliedBy(2);
    }
    return d.compareTo(max) > 0 ? max : d;
  }

  /** Aborts a wait in progress and ends the waiting session. Idempotent. */
  @Override
  public void close() {
    closed = true;
    LockWaiter w = waiter;
    if (w != null) {
      w.close();
      waiter = null;
    }
  }
}
