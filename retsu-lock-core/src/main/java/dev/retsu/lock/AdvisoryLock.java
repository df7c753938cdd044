package dev.retsu.lock;

import dev.retsu.lock.internal.Checks;
import dev.retsu.lock.internal.Diagnostics;
import dev.retsu.lock.internal.TimeSource;
import dev.retsu.lock.internal.session.LockSession;
import dev.retsu.lock.internal.session.LockWaiter;
import dev.retsu.lock.internal.session.Notices;
import dev.retsu.lock.internal.session.SessionOpener;
import dev.retsu.lock.internal.session.SessionTerminator;
import dev.retsu.lock.internal.watch.Holders;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * One advisory lock in one database, for one candidate: {@link #tryAcquire()} takes it without
 * blocking and returns an {@link AdvisoryLockLease} that owns the session holding it.
 *
 * <p>The lock belongs to a database session, not to a thread or a process. So:
 *
 * <ul>
 *   <li>when the lock is not taken, the connection goes back to its pool holding nothing;
 *   <li>when it is taken, the lease keeps that one connection, leader work runs on it, and closing
 *       the lease ends the physical session, even on a pooled data source (HikariCP and DBCP2 evict
 *       it, any other pgjdbc pool has its physical connection closed under it);
 *   <li>when anything fails or is interrupted half way, the session is ended too, never returned.
 * </ul>
 *
 * <p>The statement that takes the lock first checks, in the same statement, that the server is not
 * a hot standby ({@code pg_is_in_recovery()}) and that this backend does not already hold the key
 * (a backend shared between clients, as behind a transaction-mode pooler); both throw {@link
 * UnsafeSessionException}. It applies the session settings in that same statement, only when the
 * lock was granted. A connection borrowed inside a transaction is rolled back before locking.
 *
 * <pre>{@code
 * AdvisoryLock lock = AdvisoryLock.builder(dataSource, LockKey.named("billing", "invoice-run"))
 *     .candidateId("worker-1")
 *     .build();
 * try (AdvisoryLockLease lease = lock.tryAcquire().orElse(null)) {
 *   if (lease != null) {
 *     lease.withConnection(c -> c.createStatement().executeUpdate("..."));
 *   }
 * }
 * }</pre>
 *
 * <p>Immutable and thread-safe; any number of threads may call {@link #tryAcquire()}.
 */
public final class AdvisoryLock {

  /** Default round-trip timeout: 10 seconds. */
  public static final Duration DEFAULT_ROUND_TRIP_TIMEOUT = Duration.ofSeconds(10);

  /** Prefix of the {@code application_name} a lease sets on its session. */
  public static final String APPLICATION_NAME_PREFIX = Notices.PREFIX;

  private static final Pattern SETTING_NAME = Pattern.compile("[a-z_][a-z0-9_]*(\\.[a-z0-9_]+)?");

  private final LockKey key;
  private final String candidateId;
  private final Duration roundTripTimeout;
  private final SessionOpener.Spec spec;

  private AdvisoryLock(Builder b) {
    this.key = b.key;
    this.candidateId = b.candidateId != null ? b.candidateId : defaultCandidateId();
    this.roundTripTimeout = b.roundTripTimeout;
    // A plain lease has no heartbeat and no self-fencing deadline: it proves what it holds when
    // verify() asks, reading pg_locks once user code has used the session.
    this.spec =
        new SessionOpener.Spec(
            b.dataSource,
            key,
            candidateId,
            Diagnostics.context(key, candidateId),
            applicationName(candidateId),
            Collections.unmodifiableMap(new LinkedHashMap<>(b.sessionSettings)),
            roundTripTimeout,
            Checks.MAX_DURATION,
            Checks.MAX_DURATION,
            TimeSource.SYSTEM);
    SessionTerminator.prepare(b.dataSource); // no reflection later, when a release must be quick
  }

  /**
   * Returns a lock with default options.
   *
   * @param dataSource where sessions come from; pooled or not
   * @param key the key
   * @return the lock
   */
  public static AdvisoryLock of(DataSource dataSource, LockKey key) {
    return builder(dataSource, key).build();
  }

  /**
   * Returns a builder.
   *
   * @param dataSource where sessions come from; pooled or not
   * @param key the key
   * @return the builder
   */
  public static Builder builder(DataSource dataSource, LockKey key) {
    return new Builder(dataSource, key);
  }

  /**
   * Returns a candidate id made of the host name, the process id and a random suffix.
   *
   * @return a new id
   */
  public static String defaultCandidateId() {
    String host;
    try {
      host = InetAddress.getLocalHost().getHostName();
    } catch (UnknownHostException | RuntimeException e) {
      host = "unknown-host";
    }
    if (host.length() > 40) {
      host = host.substring(0, 40);
    }
    byte[] suffix = new byte[2];
    new SecureRandom().nextBytes(suffix);
    return String.format(
        "%s-%d-%02x%02x",
        host, ManagementFactory.getRuntimeMXBean().getPid(), suffix[0], suffix[1]);
  }

  /**
   * Returns the key.
   *
   * @return the key
   */
  public LockKey key() {
    return key;
  }

  /**
   * Returns this candidate's id.
   *
   * @return the id
   */
  public String candidateId() {
    return candidateId;
  }

  /**
   * Returns the network timeout of the library's own round trips.
   *
   * @return the timeout
   */
  public Duration roundTripTimeout() {
    return roundTripTimeout;
  }

  /** The {@code application_name} of a candidate's sessions, cut to PostgreSQL's 63 bytes. */
  static String applicationName(String candidateId) {
    String name = APPLICATION_NAME_PREFIX + candidateId;
    return name.length() > 63 ? name.substring(0, 63) : name;
  }

  /**
   * Tries to take the lock without waiting.
   *
   * @return the lease if taken; empty if another session holds the lock
   * @throws UnsafeSessionException if the server is a hot standby or the backend already holds the
   *     key (a transaction-mode pooler shares it)
   * @throws AdvisoryLockException if the database cannot be reached or the attempt fails (the
   *     SQLException is the cause); the session is ended, never returned to a pool
   */
  public Optional<AdvisoryLockLease> tryAcquire() {
    Optional<LockSession> s = SessionOpener.tryLock(spec);
    return s.isEmpty() ? Optional.empty() : Optional.of(new AdvisoryLockLease(this, s.get()));
  }

  /**
   * Takes the lock, waiting up to {@code maxWait} for the session that holds it to release it. The
   * wait runs on a session of its own, opened for this call and blocked in PostgreSQL's lock queue
   * ({@code pg_advisory_lock} under {@code lock_timeout}), so the lock is granted the moment the
   * holder's session ends; the same checks as {@link #tryAcquire()} refuse a hot standby and a
   * shared backend before the wait. When the wait runs out the session is ended and nothing is
   * held. The calling thread blocks for up to {@code maxWait} plus the round-trip timeout; an
   * interrupt is seen when the wait ends (the lock is then released and the call fails).
   *
   * <p>A waiting session holds a snapshot for as long as it waits, which holds back the server's
   * vacuum horizon: keep {@code maxWait} short where the database is busy.
   *
   * @param maxWait how long to wait at most: 10 ms to 24 days
   * @return the lease if taken; empty if the lock was still held elsewhere after {@code maxWait}
   * @throws UnsafeSessionException if the server is a hot standby or the backend is shared
   * @throws AdvisoryLockException if the database cannot be reached, the wait fails or the thread
   *     was interrupted (the SQLException or the interrupt is the cause)
   */
  public Optional<AdvisoryLockLease> acquire(Duration maxWait) {
    Checks.atLeast("maxWait", maxWait, Duration.ofMillis(10));
    try (LockWaiter waiter = LockWaiter.open(spec, maxWait)) {
      Optional<LockSession> s = waiter.await();
      return s.isEmpty() ? Optional.empty() : Optional.of(new AdvisoryLockLease(this, s.get()));
    }
  }

  /**
   * Returns who holds the lock right now, on a connection borrowed for this one query: what {@link
   * LeaderInfo#of(DataSource, LockKey)} reads, each round trip bounded by the round-trip timeout.
   *
   * @return the holder, or empty if nobody holds it
   * @throws AdvisoryLockException if the query fails
   */
  public Optional<LeaderInfo> currentHolder() {
    return Holders.current(spec).map(LeaderInfo::of);
  }

  /** How the lock's sessions are opened (the loop's tests open sessions with it). */
  SessionOpener.Spec spec() {
    return spec;
  }

  @Override
  public String toString() {
    return "AdvisoryLock" + spec.context();
  }

  /** Options of an {@link AdvisoryLock}. Not thread-safe; {@link #build()} copies them. */
  public static final class Builder {
    private final DataSource dataSource;
    private final LockKey key;
    private String candidateId;
    private Duration roundTripTimeout = DEFAULT_ROUND_TRIP_TIMEOUT;
    private final Map<String, String> sessionSettings = new LinkedHashMap<>();

    private Builder(DataSource dataSource, LockKey key) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
      this.key = Objects.requireNonNull(key, "key");
    }

    /**
     * Sets the candidate id, shown in {@code application_name} and logs.
     *
     * @param candidateId 1 to 100 printable characters
     * @return this builder
     */
    public Builder candidateId(String candidateId) {
      this.candidateId = Checks.candidateId(candidateId);
      return this;
    }

    /**
     * Sets the network timeout of the library's own round trips. Defaults to 10 seconds.
     *
     * @param timeout positive
     * @return this builder
     */
    public Builder roundTripTimeout(Duration timeout) {
      this.roundTripTimeout = Checks.positive("roundTripTimeout", timeout);
      return this;
    }

    /**
     * Adds a setting the lease's session gets, applied in the statement that takes the lock (and
     * only when it is taken). Settings the server does not know are skipped.
     *
     * @param name a PostgreSQL setting name, such as {@code tcp_keepalives_idle}
     * @param value its value
     * @return this builder
     */
    public Builder sessionSetting(String name, String value) {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(value, "value");
      if (!SETTING_NAME.matcher(name).matches()) {
        throw new IllegalArgumentException(
            "setting name must be a PostgreSQL setting name like tcp_keepalives_idle, but was \""
                + Checks.shorten(name)
                + "\"");
      }
      if (name.equals("application_name")) {
        throw new IllegalArgumentException(
            "application_name is set from the candidate id; use candidateId(...) instead");
      }
      sessionSettings.put(name, value);
      return this;
    }

    /**
     * Builds the lock.
     *
     * @return the lock
     */
    public AdvisoryLock build() {
      return new AdvisoryLock(this);
    }
  }
}
