package dev.retsu.lock;

import dev.retsu.lock.internal.Checks;
import dev.retsu.lock.internal.PgSession;
import dev.retsu.lock.internal.SessionTerminator;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.security.SecureRandom;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.Executor;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
  public static final String APPLICATION_NAME_PREFIX = "retsu-lock:";

  static final Executor DIRECT = Runnable::run;
  private static final Logger LOG = LoggerFactory.getLogger(AdvisoryLock.class);
  private static final Pattern SETTING_NAME = Pattern.compile("[a-z_][a-z0-9_]*(\\.[a-z0-9_]+)?");

  private final DataSource dataSource;
  private final LockKey key;
  private final String candidateId;
  private final Duration roundTripTimeout;
  private final Map<String, String> sessionSettings;
  private final String context;

  private AdvisoryLock(Builder b) {
    this.dataSource = b.dataSource;
    this.key = b.key;
    this.candidateId = b.candidateId != null ? b.candidateId : defaultCandidateId();
    this.roundTripTimeout = b.roundTripTimeout;
    Map<String, String> settings = new LinkedHashMap<>();
    settings.put("application_name", applicationName(candidateId));
    settings.putAll(b.sessionSettings);
    this.sessionSettings = Collections.unmodifiableMap(settings);
    this.context = Diagnostics.context(key, candidateId);
    SessionTerminator.prepare(dataSource); // no reflection later, when a release must be quick
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

  DataSource dataSource() {
    return dataSource;
  }

  String context() {
    return context;
  }

  int timeoutMillis() {
    return (int) roundTripTimeout.toMillis();
  }

  String applicationName() {
    return sessionSettings.get("application_name");
  }

  private static String applicationName(String candidateId) {
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
    Connection conn = borrow();
    boolean settled = false;
    try {
      int previousTimeout = conn.getNetworkTimeout();
      boolean autoCommit = prepare(conn);
      Attempt a;
      String marker = newMarker();
      try (PreparedStatement ps = conn.prepareStatement(SessionSql.tryLock(key))) {
        int next = bindSettings(conn, ps, 1);
        ps.setString(next++, marker);
        next = key.bindArguments(ps, next);
        next = key.bindLocks(ps, next);
        next = key.bindArguments(ps, next);
        key.bindArguments(ps, next);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          a =
              new Attempt(
                  rs.getInt(1),
                  rs.getBoolean(2),
                  rs.getBoolean(3),
                  rs.getBoolean(4),
                  rs.getArray(5),
                  rs.getString(6));
        }
      }
      refuseUnsafe(a.pid, a.inRecovery, a.alreadyHeld);
      if (!a.locked) {
        conn.setNetworkTimeout(DIRECT, previousTimeout);
        if (!autoCommit) {
          conn.setAutoCommit(false); // hand it back as we found it
        }
        settled = true;
        conn.close();
        LOG.debug("{} Lock held elsewhere", context);
        return Optional.empty();
      }
      List<String> applied = applied(a.settings);
      conn.setNetworkTimeout(DIRECT, previousTimeout);
      if (Thread.currentThread().isInterrupted()) {
        throw new AdvisoryLockException(
            "Interrupted while acquiring; the session was ended",
            key,
            candidateId,
            new InterruptedException());
      }
      AdvisoryLockLease lease =
          new AdvisoryLockLease(this, conn, a.pid, Instant.now(), applied, a.database, marker);
      settled = true;
      LOG.debug("{} Lock acquired on backend pid {} in database {}", context, a.pid, a.database);
      return Optional.of(lease);
    } catch (SQLException e) {
      throw failed("Acquiring failed", e);
    } finally {
      if (!settled) {
        // No statement on it: a refused session may be a backend shared with another client.
        SessionTerminator.endSession(dataSource, conn, true, context);
      }
    }
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
    try (LockWaiter waiter = LockWaiter.open(this, maxWait)) {
      return waiter.await();
    }
  }

  /** A fresh session marker (see {@link SessionSql#MARKER}); unique per session we lock on. */
  static String newMarker() {
    return UUID.randomUUID().toString();
  }

  private record Attempt(
      int pid,
      boolean inRecovery,
      boolean alreadyHeld,
      boolean locked,
      Array settings,
      String database) {}

  AdvisoryLockException failed(String what, SQLException e) {
    return new AdvisoryLockException(
        what + " (SQLState " + e.getSQLState() + "); the session was ended", key, candidateId, e);
  }

  void refuseUnsafe(int pid, boolean inRecovery, boolean alreadyHeld) {
    if (inRecovery) {
      throw Refusals.hotStandby(key, candidateId);
    }
    if (alreadyHeld) {
      throw Refusals.alreadyHeld(pid, key, candidateId);
    }
  }

  Connection borrow() {
    try {
      return dataSource.getConnection();
    } catch (SQLException e) {
      throw new AdvisoryLockException(
          "Cannot connect to the database (SQLState " + e.getSQLState() + ")", key, candidateId, e);
    }
  }

  /**
   * Bounds our own round trips and ends any transaction the borrowed connection is in (rolled back:
   * a session lock taken inside it would outlive it, and the session would idle in it).
   *
   * @return the connection's autocommit as borrowed
   */
  boolean prepare(Connection conn) throws SQLException {
    conn.setNetworkTimeout(DIRECT, timeoutMillis());
    boolean autoCommit = conn.getAutoCommit();
    if (!autoCommit) {
      conn.rollback();
      conn.setAutoCommit(true);
    } else if (PgSession.transaction(conn) == PgSession.Transaction.OPEN
        || PgSession.transaction(conn) == PgSession.Transaction.FAILED) {
      try (Statement s = conn.createStatement()) {
        s.execute("ROLLBACK");
      }
    }
    return autoCommit;
  }

  /**
   * Gives the client's socket the same keepalives the server side gets, when they are configured
   * (see {@link ServerBounds}), so a client blocked in a long wait notices a dead server or a
   * healed partition as fast as the server notices a dead client.
   *
   * @return true if they are on
   */
  boolean clientKeepalives(Connection conn) {
    String idle = sessionSettings.get("tcp_keepalives_idle");
    String interval = sessionSettings.get("tcp_keepalives_interval");
    String count = sessionSettings.get("tcp_keepalives_count");
    if (idle == null || interval == null || count == null) {
      return false;
    }
    try {
      return PgSession.clientKeepalives(
          conn, Integer.parseInt(idle), Integer.parseInt(interval), Integer.parseInt(count));
    } catch (NumberFormatException e) {
      LOG.debug("{} Keepalive settings are not whole seconds; client keepalives stay off", context);
      return false;
    }
  }

  /** Binds the session settings as two text arrays; returns the next free index. */
  int bindSettings(Connection conn, PreparedStatement ps, int index) throws SQLException {
    ps.setArray(index, conn.createArrayOf("text", sessionSettings.keySet().toArray()));
    ps.setArray(index + 1, conn.createArrayOf("text", sessionSettings.values().toArray()));
    return index + 2;
  }

  /**
   * The settings the server applied, without {@code application_name} (always set); logs those it
   * does not know.
   */
  List<String> applied(Array names) throws SQLException {
    List<String> applied = new ArrayList<>();
    if (names != null) {
      Collections.addAll(applied, (String[]) names.getArray());
    }
    applied.remove("application_name");
    if (applied.size() < sessionSettings.size() - 1) {
      List<String> missing = new ArrayList<>(sessionSettings.keySet());
      missing.remove("application_name");
      missing.removeAll(applied);
      LOG.debug("{} The server does not know the session settings {}; skipped", context, missing);
    }
    return Collections.unmodifiableList(applied);
  }

  /**
   * Returns who holds the lock right now, on a connection borrowed for this one query.
   *
   * @return the holder, or empty if nobody holds it
   * @throws AdvisoryLockException if the query fails
   */
  public Optional<LockHolder> currentHolder() {
    try (Connection conn = dataSource.getConnection()) {
      int previous = conn.getNetworkTimeout();
      conn.setNetworkTimeout(DIRECT, timeoutMillis());
      try (PreparedStatement ps = conn.prepareStatement(SessionSql.currentHolder(key))) {
        key.bindLocks(ps, 1);
        try (ResultSet rs = ps.executeQuery()) {
          if (!rs.next()) {
            return Optional.empty();
          }
          Timestamp since = rs.getTimestamp(5);
          return Optional.of(
              new LockHolder(
                  rs.getInt(1),
                  rs.getString(2),
                  rs.getString(3),
                  Optional.ofNullable(rs.getString(4)),
                  Optional.ofNullable(since).map(Timestamp::toInstant),
                  rs.getString(6)));
        }
      } finally {
        conn.setNetworkTimeout(DIRECT, previous);
      }
    } catch (SQLException e) {
      throw new AdvisoryLockException(
          "Cannot read the current holder (SQLState " + e.getSQLState() + ")", key, candidateId, e);
    }
  }

  @Override
  public String toString() {
    return "AdvisoryLock" + context;
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
