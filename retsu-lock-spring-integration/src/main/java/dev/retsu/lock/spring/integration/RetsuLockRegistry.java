package dev.retsu.lock.spring.integration;

import dev.retsu.lock.AdvisoryLock;
import dev.retsu.lock.AdvisoryLockLease;
import dev.retsu.lock.LockKey;
import java.time.Duration;
import java.util.ConcurrentModificationException;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.Lock;
import javax.sql.DataSource;
import org.springframework.integration.support.locks.ExpirableLockRegistry;
import org.springframework.integration.support.locks.RenewableLockRegistry;

/**
 * A Spring Integration {@code LockRegistry} on PostgreSQL session advisory locks, for a small,
 * stable set of keys (a few dozen, not one per message). {@link #obtain(Object)} returns one {@link
 * Lock} per key and JVM with {@code java.util.concurrent.locks.Lock} semantics:
 *
 * <ul>
 *   <li><b>Ownership is per thread, re-entrancy is local.</b> Threads of one JVM queue on a local
 *       lock first; only the owner talks to the database. A re-entrant {@code lock()} or {@code
 *       tryLock()} proves with one round trip that the session still holds the key (never another
 *       {@code pg_try_advisory_lock}, which the same session is always granted) and throws {@link
 *       ConcurrentModificationException} when it does not.
 *   <li><b>Zero-wait attempts use a pooled connection</b> ({@code tryLock()}, and the first attempt
 *       of every acquire), which goes back to the pool holding nothing when the key is held
 *       elsewhere. <b>Any real wait opens a session of its own</b>, blocked in the server's lock
 *       queue ({@code lock()}, {@code lockInterruptibly()}, {@code tryLock(time, unit)}), so it is
 *       granted the moment the holder's session ends. Each held key keeps its own session, so a
 *       release never waits behind an acquire.
 *   <li><b>{@code unlock()}</b> by a thread that does not hold the lock throws {@link
 *       IllegalMonitorStateException}; the last {@code unlock()} unlocks the key on its session and
 *       ends the session, and throws {@link ConcurrentModificationException} if the session had
 *       lost the key (terminated, server restart): another node may have held it meanwhile.
 * </ul>
 *
 * <p>A held key costs one database session for as long as it is held (taken from the data source,
 * and ended, not returned, at release); a {@code lock()} that waits costs a second one while it
 * waits. There is no time-to-live: a holder keeps the key until it unlocks it or its session ends
 * (its process dies, the session is terminated, or its host is cut off past the server keepalives);
 * {@link #renewLock(Object)} proves ownership instead of extending anything. A lost key is noticed
 * by the holder at its next round trip (re-entrant acquire, {@code renewLock}, {@code unlock}), not
 * before.
 *
 * <p>Thread-safe.
 */
public final class RetsuLockRegistry
    implements ExpirableLockRegistry<Lock>, RenewableLockRegistry<Lock> {

  /** Default namespace of the keys: {@code spring-integration}. */
  public static final String DEFAULT_NAMESPACE = "spring-integration";

  /**
   * Default longest single wait in the server's lock queue: 5 seconds. A blocking {@code lock()}
   * waits in slices of this length, so an interrupt is seen within one slice; each slice that runs
   * out leaves one {@code lock_timeout} ERROR line in the server log.
   */
  public static final Duration DEFAULT_WAIT_SLICE = Duration.ofSeconds(5);

  private final DataSource dataSource;
  private final String namespace;
  private final String candidateId;
  private final Duration roundTripTimeout;
  private final Duration waitSlice;
  private final ConcurrentHashMap<String, RegistryLock> locks = new ConcurrentHashMap<>();

  private RetsuLockRegistry(Builder b) {
    this.dataSource = b.dataSource;
    this.namespace = b.namespace;
    this.candidateId = b.candidateId != null ? b.candidateId : AdvisoryLock.defaultCandidateId();
    this.roundTripTimeout = b.roundTripTimeout;
    this.waitSlice = b.waitSlice;
  }

  /**
   * Returns a registry with every option at its default.
   *
   * @param dataSource where sessions come from; pooled or not
   * @return the registry
   */
  public static RetsuLockRegistry of(DataSource dataSource) {
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
   * Returns the lock of a key: the same object for the same key until {@link
   * #expireUnusedOlderThan(long)} drops it.
   *
   * @param lockKey a {@code String}, mapped to {@code LockKey.named(namespace, lockKey)}
   * @return the lock
   * @throws IllegalArgumentException if the key is not a String
   */
  @Override
  public Lock obtain(Object lockKey) {
    String name = name(lockKey);
    RegistryLock lock = locks.computeIfAbsent(name, this::newLock);
    lock.touch();
    return lock;
  }

  /**
   * Returns the advisory lock key of a registry key, as operators find it in {@code pg_locks}.
   *
   * @param lockKey the registry key
   * @return the key
   */
  public LockKey key(Object lockKey) {
    return LockKey.named(namespace, name(lockKey));
  }

  /**
   * Returns the lease of a key the calling thread holds, for work that must run on the session that
   * holds the key (it fails once the key is lost). Closing the lease releases the key; the holder's
   * {@code unlock()} then throws {@link ConcurrentModificationException}.
   *
   * @param lockKey the registry key
   * @return the lease, or empty if the calling thread does not hold the key
   */
  public Optional<AdvisoryLockLease> lease(Object lockKey) {
    RegistryLock lock = locks.get(name(lockKey));
    return lock == null ? Optional.empty() : lock.leaseOfCurrentThread();
  }

  /**
   * Drops the locks of keys that are not held, not waited for, and were last obtained more than
   * {@code age} milliseconds ago. A dropped key's next {@code obtain} makes a new lock.
   *
   * @param age milliseconds since the key was last obtained
   */
  @Override
  public void expireUnusedOlderThan(long age) {
    long now = System.nanoTime();
    locks.values().removeIf(l -> l.unusedFor(now, age));
  }

  /**
   * Proves with one round trip that the calling thread's hold on the key is still backed by its
   * session. There is no time-to-live to renew.
   *
   * @param lockKey the registry key
   * @throws IllegalMonitorStateException if the calling thread does not hold the key
   * @throws ConcurrentModificationException if the session lost the key
   */
  @Override
  public void renewLock(Object lockKey) {
    RegistryLock lock = locks.get(name(lockKey));
    if (lock == null) {
      throw new IllegalMonitorStateException(
          "The current thread does not hold the lock " + lockKey);
    }
    lock.prove();
  }

  /**
   * The same as {@link #renewLock(Object)}: the locks have no time-to-live, so {@code ttl} is not
   * used.
   *
   * @param lockKey the registry key
   * @param ttl ignored
   */
  @Override
  public void renewLock(Object lockKey, Duration ttl) {
    renewLock(lockKey);
  }

  /**
   * Returns how many keys have a lock object in this registry.
   *
   * @return the number of keys
   */
  public int size() {
    return locks.size();
  }

  @Override
  public String toString() {
    return "RetsuLockRegistry{namespace=" + namespace + ", keys=" + locks.size() + "}";
  }

  Duration waitSlice() {
    return waitSlice;
  }

  private static String name(Object lockKey) {
    Objects.requireNonNull(lockKey, "lockKey");
    if (!(lockKey instanceof String)) {
      throw new IllegalArgumentException(
          "lockKey must be a String, but was a " + lockKey.getClass().getName());
    }
    return (String) lockKey;
  }

  private RegistryLock newLock(String name) {
    AdvisoryLock lock =
        AdvisoryLock.builder(dataSource, LockKey.named(namespace, name))
            .candidateId(candidateId)
            .roundTripTimeout(roundTripTimeout)
            .sessionSetting("tcp_keepalives_idle", "5")
            .sessionSetting("tcp_keepalives_interval", "2")
            .sessionSetting("tcp_keepalives_count", "3")
            .sessionSetting("tcp_user_timeout", "11000")
            .build();
    return new RegistryLock(name, lock, this);
  }

  /** Options of a {@link RetsuLockRegistry}; each has a default. Not thread-safe. */
  public static final class Builder {
    private final DataSource dataSource;
    private String namespace = DEFAULT_NAMESPACE;
    private String candidateId;
    private Duration roundTripTimeout = AdvisoryLock.DEFAULT_ROUND_TRIP_TIMEOUT;
    private Duration waitSlice = DEFAULT_WAIT_SLICE;

    private Builder(DataSource dataSource) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    }

    /**
     * Sets the namespace keys live in. Defaults to {@value RetsuLockRegistry#DEFAULT_NAMESPACE}.
     *
     * @param namespace not blank
     * @return this builder
     */
    public Builder namespace(String namespace) {
      this.namespace = Checks.notBlank("namespace", namespace);
      return this;
    }

    /**
     * Sets this node's id, in {@code application_name} of each holding session. Defaults to host,
     * pid and a random suffix.
     *
     * @param candidateId 1 to 100 printable characters
     * @return this builder
     */
    public Builder candidateId(String candidateId) {
      AdvisoryLock.builder(dataSource, LockKey.of(0L)).candidateId(candidateId);
      this.candidateId = candidateId;
      return this;
    }

    /**
     * Sets the network timeout of the registry's own round trips. Defaults to 10 seconds.
     *
     * @param timeout 1 ms to 24 days
     * @return this builder
     */
    public Builder roundTripTimeout(Duration timeout) {
      this.roundTripTimeout = Checks.atLeast("roundTripTimeout", timeout, Duration.ofMillis(1));
      return this;
    }

    /**
     * Sets the longest single wait of a blocking {@code lock()} in the server's lock queue.
     * Defaults to 5 seconds.
     *
     * @param slice 10 ms to 24 days
     * @return this builder
     */
    public Builder waitSlice(Duration slice) {
      this.waitSlice = Checks.atLeast("waitSlice", slice, Duration.ofMillis(10));
      return this;
    }

    /**
     * Builds the registry.
     *
     * @return the registry
     */
    public RetsuLockRegistry build() {
      return new RetsuLockRegistry(this);
    }
  }
}
