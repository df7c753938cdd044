package dev.retsu.lock.micrometer.internal;

import dev.retsu.lock.AttemptResult;
import dev.retsu.lock.LeaderChange;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The plumbing every listener-driven binder shares ({@code LeaderMetrics}, {@code
 * LeaderGroupMetrics}, {@code QueueStateMetrics}): one lifecycle lock; bind once, to one registry,
 * never after close; the meters registered at bind, rolled back if one is refused and removed
 * exactly on close; the subscription to the loop's or group's events, made after the meters and
 * before the catch-up, so that an event from then on waits for the lock and a term read in the
 * catch-up is either still running or its {@code onLost} comes after; and events that never throw
 * into the loop (a failure is logged at WARN with the binder's context). Thread-safe.
 */
public final class ListenerBinding {

  private static final Logger log = LoggerFactory.getLogger(ListenerBinding.class);

  /** Where the events come from: a loop or a group. */
  public interface Source {
    /**
     * Subscribes.
     *
     * @param listener the listener
     */
    void addListener(LeaderListener listener);

    /**
     * Unsubscribes.
     *
     * @param listener the listener
     * @return whether it was subscribed
     */
    boolean removeListener(LeaderListener listener);
  }

  /**
   * Returns a source from two method references ({@code loop::addListener, loop::removeListener}).
   *
   * @param add subscribes
   * @param remove unsubscribes
   * @return the source
   */
  public static Source source(
      Consumer<LeaderListener> add, java.util.function.Predicate<LeaderListener> remove) {
    return new Source() {
      @Override
      public void addListener(LeaderListener listener) {
        add.accept(listener);
      }

      @Override
      public boolean removeListener(LeaderListener listener) {
        return remove.test(listener);
      }
    };
  }

  private final String type;
  private final String context;
  private final Source source;
  private final LeaderListener listener;
  private final ReentrantLock lock = new ReentrantLock();
  private final List<Meter> meters = new ArrayList<>();
  private volatile MeterRegistry registry;
  private boolean closed;

  /**
   * Creates the binding; nothing is subscribed or registered until {@link #bind}.
   *
   * @param type the binder's simple name, for messages: {@code LeaderMetrics}
   * @param context the log prefix of the loop or group
   * @param source where the events come from
   * @param events what the binder does with them; its failures are logged, never thrown
   */
  public ListenerBinding(String type, String context, Source source, LeaderListener events) {
    this.type = type;
    this.context = context;
    this.source = source;
    this.listener = new Guarded(Objects.requireNonNull(events, "events"));
  }

  /**
   * Returns the lock that serialises bind, close and the binder's own state changes.
   *
   * @return the lock
   */
  public ReentrantLock lock() {
    return lock;
  }

  /**
   * Returns the listener as subscribed: the binder's events, guarded.
   *
   * @return the listener
   */
  public LeaderListener listener() {
    return listener;
  }

  /**
   * Returns the registry once bound (and until closed), else null.
   *
   * @return the registry
   */
  public MeterRegistry registry() {
    return registry;
  }

  /**
   * Returns whether {@link #close} ran; read under {@link #lock()}.
   *
   * @return true once closed
   */
  public boolean isClosed() {
    return closed;
  }

  /**
   * Binds: under the lock, fails if closed or bound already, registers the meters through {@code
   * register} (which may refuse with an exception: every meter it registered is removed again),
   * subscribes, then runs {@code catchUp}.
   *
   * @param registry the registry
   * @param register registers the meters with {@link #add}
   * @param catchUp reads the current term, under the lock, after the subscription
   * @throws IllegalStateException if closed or bound already, or as {@code register} throws
   */
  public void bind(MeterRegistry registry, Consumer<MeterRegistry> register, Runnable catchUp) {
    Objects.requireNonNull(registry, "registry");
    lock.lock();
    try {
      if (closed) {
        throw new IllegalStateException(context + " " + type + " is closed");
      }
      if (this.registry != null) {
        throw new IllegalStateException(
            context
                + " "
                + type
                + " is bound to a registry already; use a CompositeMeterRegistry to export to"
                + " several");
      }
      this.registry = registry;
      try {
        register.accept(registry);
      } catch (RuntimeException e) {
        removeMeters();
        this.registry = null;
        throw e;
      }
      source.addListener(listener);
      catchUp.run();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Remembers a meter registered at bind, to remove exactly it on close.
   *
   * @param meter the meter
   * @param <M> its type
   * @return the meter
   */
  public <M extends Meter> M add(M meter) {
    meters.add(meter);
    return meter;
  }

  /**
   * Closes: under the lock, unsubscribes, removes the meters registered at bind, then runs {@code
   * then}. Idempotent; a second call does nothing.
   *
   * @param then the binder's own clean-up
   * @return true for the call that closed
   */
  public boolean close(Runnable then) {
    lock.lock();
    try {
      if (closed) {
        return false;
      }
      closed = true;
      source.removeListener(listener);
      removeMeters();
      then.run();
      return true;
    } finally {
      lock.unlock();
    }
  }

  private void removeMeters() {
    MeterRegistry r = registry;
    if (r != null) {
      for (Meter m : meters) {
        r.remove(m);
      }
    }
    meters.clear();
  }

  private void warn(String method, RuntimeException e) {
    log.warn("{} {}.{} failed; the loop goes on", context, type, method, e);
  }

  /** The binder's events, each failure logged and swallowed: a binder never breaks the loop. */
  private final class Guarded implements LeaderListener {
    private final LeaderListener events;

    Guarded(LeaderListener events) {
      this.events = events;
    }

    @Override
    public void onAttempt(AttemptResult result, Duration duration, Throwable error) {
      try {
        events.onAttempt(result, duration, error);
      } catch (RuntimeException e) {
        warn("onAttempt", e);
      }
    }

    @Override
    public void onAcquired(Term term) {
      try {
        events.onAcquired(term);
      } catch (RuntimeException e) {
        warn("onAcquired", e);
      }
    }

    @Override
    public void onRefreshSucceeded(Term term, Duration duration) {
      try {
        events.onRefreshSucceeded(term, duration);
      } catch (RuntimeException e) {
        warn("onRefreshSucceeded", e);
      }
    }

    @Override
    public void onRefreshFailed(Term term, Duration duration, Throwable error) {
      try {
        events.onRefreshFailed(term, duration, error);
      } catch (RuntimeException e) {
        warn("onRefreshFailed", e);
      }
    }

    @Override
    public void onLost(Term term, LossReason reason, Throwable cause) {
      try {
        events.onLost(term, reason, cause);
      } catch (RuntimeException e) {
        warn("onLost", e);
      }
    }

    @Override
    public void onLeaderChanged(LeaderChange change) {
      try {
        events.onLeaderChanged(change);
      } catch (RuntimeException e) {
        warn("onLeaderChanged", e);
      }
    }
  }
}
