package dev.retsu.lock.shedlock;

import dev.retsu.lock.AdvisoryLock;
import dev.retsu.lock.AdvisoryLockException;
import dev.retsu.lock.AdvisoryLockLease;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.UnsafeSessionException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A ShedLock {@link ExtensibleLockProvider} on PostgreSQL session advisory locks: each held lock is
 * one database session holding {@code pg_advisory_lock} on {@link LockKey#named(String, String)
 * LockKey.named(namespace, lockName)}. No table, no clocks: a holder that crashes, is killed or
 * whose session is terminated frees the lock at once, instead of after {@code lockAtMostFor}.
 *
 * <ul>
 *   <li><b>Not re-entrant:</b> a lock held by this provider (or any session) is refused to every
 *       other {@link #lock} call, from any thread.
 *   <li><b>{@code lockAtMostFor}</b> is enforced by default: a timer ends the session when it
 *       passes, counted on this JVM's monotonic clock from the start of the {@code lock} (or {@code
 *       extend}) call. {@link Builder#enforceLockAtMostFor(boolean) enforceLockAtMostFor(false)}
 *       keeps a lock until it is unlocked or its holder dies.
 *   <li><b>{@code lockAtLeastFor}</b> survives {@link SimpleLock#unlock()}: the session is kept and
 *       ended when it passes. It lasts only while this process does: a process that ends frees its
 *       locks with its sessions.
 *   <li><b>{@code extend}</b> proves in one round trip that the session still holds the lock, then
 *       restarts both bounds from the call; ShedLock's {@code KeepAliveLockProvider} works on it.
 * </ul>
 *
 * <p>A ShedLock task runs on the application's threads and connections, not on the lock's session:
 * a lock that was lost (its session terminated) is free for others while the task still runs. A
 * task that wants its database work bound to the lock runs it on {@link #lease(String)}'s session.
 * Each held lock costs one connection for as long as it is held.
 *
 * <p>Thread-safe. {@link #close()} ends every session this provider holds.
 */
public final class RetsuLockProvider implements ExtensibleLockProvider, AutoCloseable {

  /** Default namespace of the lock keys: {@code shedlock}. */
  public static final String DEFAULT_NAMESPACE = "shedlock";

  /** Default {@code tcp_keepalives_idle} of a held lock's session: 5 seconds. */
  public static final Duration DEFAULT_KEEPALIVE_IDLE = Duration.ofSeconds(5);

  /** Default {@code tcp_keepalives_interval} of a held lock's session: 2 seconds. */
  public static final Duration DEFAULT_KEEPALIVE_INTERVAL = Duration.ofSeconds(2);

  /** Default {@code tcp_keepalives_count} of a held lock's session: 3. */
  public static final int DEFAULT_KEEPALIVE_COUNT = 3;

  private static final Logger LOG = LoggerFactory.getLogger(RetsuLockProvider.class);
  private static final AtomicInteger INSTANCES = new AtomicInteger();

  private final DataSource dataSource;
  private final String namespace;
  private final String candidateId;
  private final boolean enforceLockAtMostFor;
  private final Duration roundTripTimeout;
  private final Duration keepaliveIdle;
  private final Duration keepaliveInterval;
  private final int keepaliveCount;
  private final ConcurrentHashMap<String, AdvisoryLock> locks = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, HeldSession> held = new ConcurrentHashMap<>();
  private final ScheduledThreadPoolExecutor timer;
  private final AtomicBoolean closed = new AtomicBoolean();

  private RetsuLockProvider(Builder b) {
    this.dataSource = b.dataSource;
    this.namespace = b.namespace;
    this.candidateId = b.candidateId != null ? b.candidateId : AdvisoryLock.defaultCandidateId();
    this.enforceLockAtMostFor = b.enforceLockAtMostFor;
    this.roundTripTimeout = b.roundTripTimeout;
    this.keepaliveIdle = b.keepaliveIdle;
    this.keepaliveInterval = b.keepaliveInterval;
    this.keepaliveCount = b.keepaliveCount;
    String threadName = "retsu-lock-shedlock-timer-" + INSTANCES.incrementAndGet();
    this.timer =
        new ScheduledThreadPoolExecutor(
            1,
            r -> {
              Thread t = new Thread(r, threadName);
              t.setDaemon(true);
              return t;
            });
    timer.setRemoveOnCancelPolicy(true);
    timer.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
  }

  /**
   * Returns a provider with every option at its default.
   *
   * @param dataSource where sessions come from; pooled or not
   * @return the provider
   */
  public static RetsuLockProvider of(DataSource dataSource) {
    return builder(dataSource).build();
  }

  /**
   * Returns a builder.
   *
   * @param dataSource where sessions come from; pooled or not
   * @return the builder
   */
  public static Builder builder(DataSource dataSource) {
    return new Builder(dataSource);
  }

  /**
   * Returns the namespace lock names are keyed in.
   *
   * @return the namespace
   */
  public String namespace() {
    return namespace;
  }

  /**
   * Returns the advisory lock key of a ShedLock lock name, {@code LockKey.named(namespace(),
   * lockName)}, as operators look it up in {@code pg_locks}.
   *
   * @param lockName the ShedLock lock name
   * @return the key
   */
  public LockKey key(String lockName) {
    return LockKey.named(namespace, lockName);
  }

  /**
   * Takes the lock without waiting.
   *
   * @param lockConfiguration the lock's name and bounds
   * @return the lock, or empty if another session holds it
   * @throws UnsafeSessionException if the server is a hot standby or a transaction pooler shares
   *     the backend
   * @throws AdvisoryLockException if the database cannot be reached (the SQLException is the cause)
   * @throws IllegalStateException if the provider is closed
   */
  @Override
  public Optional<SimpleLock> lock(LockConfiguration lockConfiguration) {
    long start = System.nanoTime();
    Objects.requireNonNull(lockConfiguration, "lockConfiguration");
    ensureOpen();
    String name = lockConfiguration.getName();
    AdvisoryLock lock = locks.computeIfAbsent(name, this::newLock);
    Optional<AdvisoryLockLease> lease = lock.tryAcquire();
    if (lease.isEmpty()) {
      return Optional.empty();
    }
    HeldSession session = new HeldSession(this, name, lease.get());
    held.put(name, session);
    if (closed.get()) {
      session.release();
      throw closedException();
    }
    LOG.debug("{} Lock {} acquired on backend pid {}", lock, name, lease.get().backendPid());
    return Optional.of(
        session.activate(
            start, lockConfiguration.getLockAtMostFor(), lockConfiguration.getLockAtLeastFor()));
  }

  /**
   * Returns the lease of a lock this provider holds right now, for a task that wants its database
   * work on the lock's own session: {@code lease.withConnection(...)} runs on the session that
   * holds the lock, so that work fails instead of running on once the lock is lost. Closing the
   * lease releases the lock. After the lease was handed out, a passing {@code lockAtMostFor} ends
   * the session even in the middle of a statement.
   *
   * @param lockName the ShedLock lock name
   * @return the lease, or empty if this provider does not hold the lock
   */
  public Optional<AdvisoryLockLease> lease(String lockName) {
    HeldSession s = held.get(Objects.requireNonNull(lockName, "lockName"));
    return s == null ? Optional.empty() : s.handOut();
  }

  /**
   * Returns how many locks this provider holds right now (each is one open session), including
   * those kept for {@code lockAtLeastFor} after their unlock.
   *
   * @return the number of sessions held
   */
  public int heldSessions() {
    return held.size();
  }

  /**
   * Ends every session this provider holds (at once, {@code lockAtLeastFor} notwithstanding) and
   * stops its timer thread. Later {@link #lock} calls fail. Idempotent; never throws.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    timer.shutdownNow();
    List<HeldSession> sessions = new ArrayList<>(held.values());
    for (HeldSession s : sessions) {
      s.release();
    }
    if (!sessions.isEmpty()) {
      LOG.info(
          "[candidate={}] ShedLock provider closed; released {} lock(s)",
          candidateId,
          sessions.size());
    }
  }

  @Override
  public String toString() {
    return "RetsuLockProvider{namespace="
        + namespace
        + ", candidate="
        + candidateId
        + ", held="
        + held.size()
        + (closed.get() ? ", closed" : "")
        + "}";
  }

  boolean enforceLockAtMostFor() {
    return enforceLockAtMostFor;
  }

  int roundTripMillis() {
    return (int) roundTripTimeout.toMillis();
  }

  ScheduledThreadPoolExecutor timer() {
    return timer;
  }

  /** A released session forgets itself, unless a newer session of the same name took its place. */
  void forget(String name, HeldSession session) {
    held.remove(name, session);
  }

  private AdvisoryLock newLock(String name) {
    return AdvisoryLock.builder(dataSource, key(name))
        .candidateId(candidateId)
        .roundTripTimeout(roundTripTimeout)
        .sessionSetting("tcp_keepalives_idle", Long.toString(keepaliveIdle.toSeconds()))
        .sessionSetting("tcp_keepalives_interval", Long.toString(keepaliveInterval.toSeconds()))
        .sessionSetting("tcp_keepalives_count", Integer.toString(keepaliveCount))
        .sessionSetting(
            "tcp_user_timeout",
            Long.toString(
                keepaliveIdle.plus(keepaliveInterval.multipliedBy(keepaliveCount)).toMillis()))
        // a backend busy in a statement whose client went away (the timer aborted the session
        // under a task) notices it within this interval instead of when the statement ends
        .sessionSetting(
            "client_connection_check_interval", Long.toString(keepaliveInterval.toMillis()))
        .build();
  }

  private void ensureOpen() {
    if (closed.get()) {
      throw closedException();
    }
  }

  private IllegalStateException closedException() {
    return new IllegalStateException("The lock provider is closed " + this);
  }

  static long millisUntil(long deadlineNanos) {
    return Math.max(0, TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime()));
  }

  /** Options of a {@link RetsuLockProvider}; each has a default. Not thread-safe. */
  public static final class Builder {
    private final DataSource dataSource;
    private String namespace = DEFAULT_NAMESPACE;
    private String candidateId;
    private boolean enforceLockAtMostFor = true;
    private Duration roundTripTimeout = AdvisoryLock.DEFAULT_ROUND_TRIP_TIMEOUT;
    private Duration keepaliveIdle = DEFAULT_KEEPALIVE_IDLE;
    private Duration keepaliveInterval = DEFAULT_KEEPALIVE_INTERVAL;
    private int keepaliveCount = DEFAULT_KEEPALIVE_COUNT;

    private Builder(DataSource dataSource) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    }

    /**
     * Sets the namespace lock names are keyed in: the key of lock {@code n} is {@code
     * LockKey.named(namespace, n)}. Services that must not exclude each other's equally named locks
     * on one database use different namespaces. Defaults to {@value
     * RetsuLockProvider#DEFAULT_NAMESPACE}.
     *
     * @param namespace not blank
     * @return this builder
     */
    public Builder namespace(String namespace) {
      Objects.requireNonNull(namespace, "namespace");
      if (namespace.isBlank()) {
        throw new IllegalArgumentException(
            "namespace must not be blank, but was '" + namespace + "'");
      }
      this.namespace = namespace;
      return this;
    }

    /**
     * Sets this node's id, shown in {@code application_name} ({@code retsu-lock:<id>}) of every
     * session that holds a lock. Defaults to host, pid and a random suffix.
     *
     * @param candidateId 1 to 100 printable characters
     * @return this builder
     */
    public Builder candidateId(String candidateId) {
      // the rule every candidate id follows, checked now rather than at the first lock
      AdvisoryLock.builder(dataSource, LockKey.of(0L)).candidateId(candidateId);
      this.candidateId = candidateId;
      return this;
    }

    /**
     * Sets whether a timer ends a lock's session when its {@code lockAtMostFor} passes (the
     * default, {@code true}, and ShedLock's contract). With {@code false} a lock is held until it
     * is unlocked or its session ends (the process dies, the session is terminated, the network
     * partition outlasts the keepalives): a task that runs long keeps its lock, and a hung task
     * keeps it forever.
     *
     * @param enforce whether {@code lockAtMostFor} ends the session
     * @return this builder
     */
    public Builder enforceLockAtMostFor(boolean enforce) {
      this.enforceLockAtMostFor = enforce;
      return this;
    }

    /**
     * Sets the network timeout of each round trip the provider makes itself (take, prove, unlock).
     * Defaults to 10 seconds.
     *
     * @param timeout at least 1 ms
     * @return this builder
     */
    public Builder roundTripTimeout(Duration timeout) {
      Objects.requireNonNull(timeout, "roundTripTimeout");
      if (timeout.toMillis() < 1 || timeout.compareTo(Duration.ofDays(24)) > 0) {
        throw new IllegalArgumentException(
            "roundTripTimeout must be from 1 ms to 24 days, but was " + timeout);
      }
      this.roundTripTimeout = timeout;
      return this;
    }

    /**
     * Sets the server's TCP keepalives on each held lock's session, so the server ends the session
     * of a holder whose host died or was cut off (and frees its lock) within {@code idle + interval
     * x count}, with {@code tcp_user_timeout} to match; {@code client_connection_check_interval} is
     * set to {@code interval}, so a backend busy in a statement notices a client that went away
     * within that interval. Defaults to 5 s, 2 s and 3 (11 seconds).
     *
     * @param idle whole seconds, at least 1
     * @param interval whole seconds, at least 1
     * @param count at least 1
     * @return this builder
     */
    public Builder serverKeepalives(Duration idle, Duration interval, int count) {
      this.keepaliveIdle = wholeSeconds("keepalive idle", idle);
      this.keepaliveInterval = wholeSeconds("keepalive interval", interval);
      if (count < 1) {
        throw new IllegalArgumentException("keepalive count must be positive, but was " + count);
      }
      this.keepaliveCount = count;
      return this;
    }

    private static Duration wholeSeconds(String what, Duration d) {
      Objects.requireNonNull(d, what);
      if (d.getSeconds() < 1 || d.getNano() != 0) {
        throw new IllegalArgumentException(
            what + " must be a whole number of seconds, at least 1, but was " + d);
      }
      return d;
    }

    /**
     * Builds the provider; it starts one daemon timer thread, {@code retsu-lock-shedlock-timer-N},
     * which {@link RetsuLockProvider#close()} stops.
     *
     * @return the provider
     */
    public RetsuLockProvider build() {
      return new RetsuLockProvider(this);
    }
  }
}
