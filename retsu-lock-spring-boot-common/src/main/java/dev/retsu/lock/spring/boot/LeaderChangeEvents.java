package dev.retsu.lock.spring.boot;

import dev.retsu.lock.LeaderWatch;
import dev.retsu.lock.LockKey;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.ApplicationEventPublisher;

/**
 * The context's {@link LeaderWatch} and the one thread, {@code retsu-lock-leader-events}, that
 * publishes its changes as {@link LeaderChangedEvent}s: the watch's listener only queues the event,
 * so a slow application listener delays the events after it and nothing else (not the watch, which
 * serves every key, and not the loops and groups). Events are published in the order the watch
 * delivered them. Closing stops the registrations, publishes what is queued within a bounded wait,
 * stops the thread and closes the watch. Thread-safe.
 */
final class LeaderChangeEvents implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(LeaderChangeEvents.class);

  /** How long a close waits for queued events to be published: 5 seconds. */
  static final Duration CLOSE_WAIT = Duration.ofSeconds(5);

  private static final Object STOP = new Object();

  private final LeaderWatch watch;
  private final ApplicationEventPublisher events;
  private final LinkedBlockingQueue<Object> queue = new LinkedBlockingQueue<>();
  private final List<LeaderWatch.Registration> registrations = new ArrayList<>();
  private final ReentrantLock lock = new ReentrantLock();
  private final Thread thread;
  private boolean closed; // guarded by lock

  LeaderChangeEvents(LeaderWatch watch, ApplicationEventPublisher events) {
    this.watch = watch;
    this.events = events;
    this.thread = new Thread(this::publishLoop, "retsu-lock-leader-events");
    thread.setDaemon(true);
    thread.start();
  }

  /**
   * Starts publishing the changes of a key (the first is the watch's read of the current leader).
   */
  void watch(Object source, String name, String keyName, String candidateId, LockKey key) {
    lock.lock();
    try {
      if (closed) {
        return;
      }
      registrations.add(
          watch.watch(
              key,
              change ->
                  queue.add(new LeaderChangedEvent(source, name, keyName, candidateId, change))));
    } finally {
      lock.unlock();
    }
  }

  /** Who leads a key as the watch last delivered it; no I/O. */
  Optional<dev.retsu.lock.LeaderInfo> leader(LockKey key) {
    return watch.leader(key);
  }

  /** The watch itself, for the loops' builders: their listeners hear their key's changes. */
  LeaderWatch watch() {
    return watch;
  }

  /** The watch's name, in its session's application_name. */
  String name() {
    return watch.name();
  }

  /** Whether the watch's session is listening now. */
  boolean connected() {
    return watch.isConnected();
  }

  private void publishLoop() {
    while (true) {
      Object next;
      try {
        next = queue.take();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
      if (next == STOP) {
        return;
      }
      try {
        events.publishEvent(next);
      } catch (RuntimeException | LinkageError e) {
        LOG.warn("[watch={}] A listener of {} threw; ignored", watch.name(), next, e);
      }
    }
  }

  @Override
  public void close() {
    lock.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
      for (LeaderWatch.Registration r : registrations) {
        r.close();
      }
    } finally {
      lock.unlock();
    }
    watch.close();
    queue.add(STOP);
    try {
      thread.join(CLOSE_WAIT.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (thread.isAlive()) {
      LOG.warn(
          "[watch={}] The event thread still publishes after {} ({} queued); interrupting it",
          watch.name(),
          CLOSE_WAIT,
          queue.size());
      thread.interrupt();
    }
  }
}
