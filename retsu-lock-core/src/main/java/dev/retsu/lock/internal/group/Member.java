package dev.retsu.lock.internal.group;

import dev.retsu.lock.AdvisoryLockException;
import dev.retsu.lock.LeaderTask;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.UnsafeSessionException;
import dev.retsu.lock.internal.Lifecycle;
import dev.retsu.lock.internal.term.SessionWatchdog;
import dev.retsu.lock.internal.term.SessionWorker;
import dev.retsu.lock.internal.term.TermState;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One member of a group, what {@code LeaderGroup} is a facade over: its session slots, its
 * coordinator and its watchdog, how it starts (the first session open, or failing fast) and how it
 * stops (every term invalid, refreshes interrupted and awaited up to {@code closeTimeout}, {@code
 * onLost} per key, then every session ended). Thread-safe.
 */
public final class Member implements SessionSlot.Events {

  private static final Logger LOG = LoggerFactory.getLogger(Member.class);

  private final GroupSettings settings;
  private final GroupCore core;
  private final Lifecycle lifecycle;
  private final List<SessionSlot> slots = new ArrayList<>();
  private final Coordinator coordinator;
  private final SessionWatchdog watchdog;
  private final MemberWatch watch;

  /**
   * A member, not started.
   *
   * @param core the group's shared state
   * @param lifecycle the facade's lifecycle
   */
  public Member(GroupCore core, Lifecycle lifecycle) {
    this.settings = core.settings();
    this.core = core;
    this.lifecycle = lifecycle;
    this.watchdog = new SessionWatchdog(settings.term().time(), "group-" + settings.name());
    for (int i = 0; i < settings.sessionCount(); i++) {
      slots.add(new SessionSlot(core, i, watchdog, this));
    }
    this.coordinator = new Coordinator(core, slots);
    if (settings.memberWatchInterval().isZero()) {
      this.watch = null;
    } else {
      this.watch = new MemberWatch(core, core.membership().namespace(), coordinator::roundNow);
      coordinator.watch(watch);
    }
  }

  /** The member's session slots. */
  public List<SessionSlot> slots() {
    return slots;
  }

  /** The members seen at the last membership read. */
  public int members() {
    return coordinator.members();
  }

  /**
   * Opens the sessions (each on its thread) and, once the first is open, starts the coordinator.
   *
   * @throws AdvisoryLockException when the first session could not be opened and the group fails
   *     fast (it is FAILED then)
   */
  public void start(LeaderTask task) {
    core.task(task);
    LOG.info(
        "{} Leader group started: {} keys over {} sessions, refresh {}, membership every {}, {}",
        settings.context(),
        settings.keys().size(),
        slots.size(),
        settings.term().refreshInterval(),
        settings.membershipInterval(),
        settings.term().bounds());
    watchdog.begin();
    slots.forEach(SessionSlot::start);
    Throwable first = awaitFirstOpen();
    if (first != null && (settings.term().failFast() || core.closing())) {
      fail(first);
      throw first instanceof AdvisoryLockException
          ? (AdvisoryLockException) first
          : new AdvisoryLockException(
              "Starting the group failed", core.membership().groupKey(), candidateId(), first);
    }
    if (first != null) {
      LOG.warn(
          "{} The first session could not be opened; the sessions keep trying every {}: {}",
          settings.context(),
          settings.reconnectInterval(),
          first.getMessage());
    }
    coordinator.start();
    if (watch != null) {
      watch.start();
    }
  }

  private String candidateId() {
    return settings.term().candidateId();
  }

  /** Waits for the first session, then the others (so the first keys spread over all). */
  private Throwable awaitFirstOpen() {
    long bound = settings.term().roundTripTimeout().toMillis() * 3;
    try {
      slots.get(0).firstOpen.get(bound, TimeUnit.MILLISECONDS);
      CompletableFuture.allOf(
              slots.stream()
                  .map(s -> s.firstOpen.exceptionally(e -> null))
                  .toArray(CompletableFuture[]::new))
          .get(bound, TimeUnit.MILLISECONDS);
      return null;
    } catch (ExecutionException e) {
      return e.getCause();
    } catch (java.util.concurrent.TimeoutException e) {
      return new AdvisoryLockException(
          "The first session did not open in time", core.membership().groupKey(), candidateId(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new AdvisoryLockException(
          "Interrupted while starting", core.membership().groupKey(), candidateId(), e);
    }
  }

  @Override
  public void opened(SessionSlot slot) {
    coordinator.nudge();
  }

  @Override
  public void ended(SessionSlot slot) {
    coordinator.sessionEnded(slot);
  }

  @Override
  public void failed(SessionSlot slot, AdvisoryLockException e) {
    if (core.closing()) {
      return;
    }
    if (e instanceof UnsafeSessionException
        && ((UnsafeSessionException) e).reason() == LossReason.POOLER_DETECTED) {
      // A configuration error that retrying cannot fix: every retry would lock on a shared backend.
      Thread stopper = new Thread(() -> fail(e), "retsu-lock-group-" + settings.name() + "-stop");
      stopper.setDaemon(true);
      stopper.start();
      return;
    }
    LOG.warn(
        "{} Session s{} could not be opened, retrying in {}: {}",
        settings.context(),
        slot.index(),
        settings.reconnectInterval(),
        e.getMessage());
  }

  private void fail(Throwable cause) {
    LOG.error(
        "{} Leader group failed; it holds and contends for nothing", settings.context(), cause);
    stop();
    lifecycle.fail(cause);
  }

  /**
   * Ends everything: every term invalid, running refreshes interrupted and awaited up to {@code
   * closeTimeout}, {@code onLost} per key, every session ended.
   *
   * @return true for the one caller that did it
   */
  public boolean stop() {
    if (!core.startClosing()) {
      return false;
    }
    coordinator.stop();
    List<SessionWorker> closing = new ArrayList<>();
    for (SessionSlot s : slots) {
      SessionWorker w = s.worker();
      if (w != null) {
        w.endSession(LossReason.CLOSED, null, false);
        closing.add(w);
      }
    }
    for (SessionWorker w : closing) {
      w.close(); // awaits the worker up to closeTimeout, then finishes it from here
    }
    long deadline = System.nanoTime() + settings.term().closeTimeout().toNanos();
    for (SessionSlot s : slots) {
      Thread t = s.thread();
      if (t != null && t != Thread.currentThread()) {
        try {
          t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }
    watchdog.stop();
    if (watch != null) {
      watch.leave(); // the keys are released: the others take them over at once
    }
    return true;
  }

  /**
   * Releases one key gracefully to hand it over ({@link LossReason#YIELDED}) and does not take it
   * again for {@code cooldownNanos}; waits for the release, bounded.
   *
   * @return true if a term of it ended
   */
  public boolean yieldKey(LockKey key, long cooldownNanos) {
    TermState t = core.owned().get(key);
    if (t == null || !t.isHeld()) {
      return false;
    }
    core.coolDown(key, settings.term().time().nanoTime() + cooldownNanos);
    for (SessionSlot s : slots) {
      SessionWorker w = s.worker();
      if (w != null && w.terms().get(key) == t) {
        try {
          Integer n =
              s.release(List.of(key), LossReason.YIELDED)
                  .get(
                      settings.term().closeTimeout().toMillis()
                          + settings.term().roundTripTimeout().toMillis(),
                      TimeUnit.MILLISECONDS);
          boolean released = n != null && n > 0;
          if (released && watch != null) {
            watch.yielded(core.indexOf(key), TimeUnit.NANOSECONDS.toMillis(cooldownNanos));
          }
          return released;
        } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
          LOG.warn("{} Yielding {} did not finish: {}", settings.context(), key, e.toString());
          return false;
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return false;
        }
      }
    }
    return false;
  }
}
