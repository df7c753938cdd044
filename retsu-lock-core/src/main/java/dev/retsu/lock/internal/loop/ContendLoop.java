package dev.retsu.lock.internal.loop;

import dev.retsu.lock.AdvisoryLockException;
import dev.retsu.lock.AttemptResult;
import dev.retsu.lock.LeaderTask;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.internal.session.Session;
import dev.retsu.lock.internal.term.SessionWatchdog;
import dev.retsu.lock.internal.term.TermListeners;
import dev.retsu.lock.internal.term.TermState;
import dev.retsu.lock.internal.term.Wakeup;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The contend loop under a {@code LeaderLoop}: attempt through the {@link Standby}; when the lock
 * is won, take the fencing token and lead the term ({@link LoopTerm}) until it ends; then pause as
 * the standby says (or for a yield's cooldown), or end the loop (the failure policy). It owns the
 * term being led, the term numbers and the closing flag that every term reads; the facade owns the
 * lifecycle, the thread and the bounded wait of {@code close()}. Thread-safe: {@link #contend} on
 * the loop's thread; the rest from any.
 */
public final class ContendLoop {

  /**
   * The loop's lines go to the public class's logger ({@code dev.retsu.lock.LeaderLoop}), the one
   * name users configure, without this layer importing the class above it.
   */
  static final String LOGGER = "dev.retsu.lock.LeaderLoop";

  private static final Logger LOG = LoggerFactory.getLogger(LOGGER);

  private final LoopSettings settings;
  private final TermListeners listeners;
  private final Standby standby;
  private final Wakeup wakeup;
  private final AtomicBoolean closing = new AtomicBoolean();

  /** One supplier for every term, linked once: not a new method reference at each takeover. */
  private final BooleanSupplier isClosing = closing::get;

  private volatile LoopTerm current;
  private volatile Duration cooldown = Duration.ZERO;
  private long termCounter;

  /**
   * The contend loop of one candidate.
   *
   * @param settings the loop's settings
   * @param listeners the loop's listeners
   * @param standby how attempts are made
   */
  public ContendLoop(LoopSettings settings, TermListeners listeners, Standby standby) {
    this.settings = settings;
    this.listeners = listeners;
    this.standby = standby;
    this.wakeup = new Wakeup(settings.term().time(), isClosing);
  }

  /** The term being led, or null. */
  public LoopTerm current() {
    return current;
  }

  /**
   * Ends the term being led gracefully and pauses contending for {@code cooldown}.
   *
   * @return true if this call ended a term; false when not leading
   */
  public boolean yield(Duration cooldown) {
    LoopTerm t = current;
    if (t == null || !t.state().isHeld()) {
      return false;
    }
    this.cooldown = cooldown;
    boolean yielded = t.yieldTerm();
    if (yielded) {
      LOG.info("{} Yielded leadership; not contending for {}", settings.context(), cooldown);
    }
    return yielded;
  }

  /**
   * Marks the loop closing, once.
   *
   * @return false when it was closing already
   */
  public boolean markClosing() {
    return closing.compareAndSet(false, true);
  }

  /** Stops contending: wakes a pause, aborts a waiting standby, closes the term being led. */
  public void stop() {
    wakeup.wakeAll();
    standby.close();
    LoopTerm t = current;
    if (t != null) {
      t.close();
    }
  }

  /**
   * Contends until closed, interrupted, or the standby ends the loop.
   *
   * @param task the leader's task
   * @param watchdog the loop's watchdog
   */
  public void contend(LeaderTask task, SessionWatchdog watchdog) {
    while (!closing.get()) {
      long started = settings.term().time().nanoTime();
      Optional<Session> won = Optional.empty();
      LoopTerm term;
      try {
        won = standby.attempt();
        if (won.isEmpty()) {
          listeners.attempt(AttemptResult.HELD_ELSEWHERE, since(started), null);
          if (!wakeup.pause(standby.afterHeldElsewhere())) {
            return;
          }
          continue;
        }
        term = LoopTerm.begin(won.get(), termCounter + 1, settings, listeners, isClosing);
      } catch (AdvisoryLockException e) {
        listeners.attempt(AttemptResult.ERROR, since(started), e);
        if (closing.get()
            || e.getCause() instanceof InterruptedException
            || !wakeup.pause(standby.afterFailure(e, won.isPresent()))) {
          return;
        }
        continue;
      }
      termCounter++;
      current = term;
      LossReason reason =
          term.lead(
              task,
              since(started),
              listeners,
              watchdog,
              isClosing,
              standby.previousEndedGracefully(),
              standby.preferredWaitingAtGrant());
      current = null;
      TermState ended = term.state();
      if (reason == LossReason.CLOSED) {
        return;
      }
      if (reason == LossReason.YIELDED) {
        Duration pause = cooldown;
        cooldown = Duration.ZERO;
        if (!wakeup.pause(pause)) {
          return;
        }
        continue;
      }
      if (!wakeup.pause(standby.afterTerm(ended))) {
        return;
      }
    }
  }

  private Duration since(long startNanos) {
    return Duration.ofNanos(settings.term().time().nanoTime() - startNanos);
  }
}
