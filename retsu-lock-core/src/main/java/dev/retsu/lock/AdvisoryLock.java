package dev.retsu.lock;

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
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;
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
 * <p>It refuses to lock on a hot standby ({@code pg_is_in_recovery()}), where advisory locks do not
 * exclude holders on the primary, and through a transaction-mode pooler, detected by a backend pid
 * that changes between statements. Both throw {@link UnsafeSessionException}.
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
  private static final int MAX_CANDIDATE_ID = 100;

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
    this.sessionSettings = Collections.unmodifiableMap(new LinkedHashMap<>(b.sessionSettings));
    this.context = Diagnostics.context(key, candidateId);
  }

  /**
   * Returns a lock with default options.
   *
   * @param dataSource where sessions come from; pooled or not
   * @param key the lock key
   * @return the lock
   */
  public static AdvisoryLock of(DataSource dataSource, LockKey key) {
    return builder(dataSource, key).build();
  }

  /**
   * Returns a builder.
   *
   * @param dataSource where sessions come from; pooled or not
   * @param key the lock key
   * @return a builder
   */
  public static Builder builder(DataSource dataSource, LockKey key) {
    return new Builder(dataSource, key);
  }

  /**
   * Returns a default candidate id: host name, process id and a random suffix, e.g. {@code
   * "worker-7f9c-12345-a1b2"}.
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
   * Returns the lock key.
   *
   * @return the key
   */
  public LockKey key() {
    return key;
  }

  /**
   * Returns the candidate id.
   *
   * @return the id
   */
  public String candidateId() {
    return candidateId;
  }

  /**
   * Returns the network timeout of each round trip this lock makes itself.
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

  /**
   * Tries once to take the lock, without waiting.
   *
   * @return a lease when this call took the lock; empty when another session holds it
   * @throws UnsafeSessionException when the server is a hot standby or a transaction-mode pooler is
   *     detected
   * @throws AdvisoryLockException when the database cannot be reached or fails (the SQLException is
   *     the cause), or the thread was interrupted; the session is ended in every such case
   */
  public Optional<AdvisoryLockLease> tryAcquire() {
    Connection conn = borrow();
    boolean settled = false;
    try {
      int previousTimeout = conn.getNetworkTimeout();
      prepare(conn);
      int pid;
      boolean inRecovery;
      boolean alreadyHeld;
      boolean locked;
      // The inner select (kept apart by OFFSET 0) runs first: a standby, or a session that holds
      // the key before we took it, never reaches pg_try_advisory_lock.
      try (PreparedStatement ps =
          conn.prepareStatement(
              "SELECT pid, in_recovery, already, CASE WHEN in_recovery OR already THEN false"
                  + " ELSE pg_try_advisory_lock("
                  + key.sqlArguments()
                  + ") END FROM (SELECT pg_backend_pid() AS pid, pg_is_in_recovery() AS"
                  + " in_recovery, "
                  + heldByThisBackendSql()
                  + " AS already OFFSET 0) s")) {
        int next = key.bindArguments(ps, 1);
        key.bindLocks(ps, next);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          pid = rs.getInt(1);
          inRecovery = rs.getBoolean(2);
          alreadyHeld = rs.getBoolean(3);
          locked = rs.getBoolean(4);
        }
      }
      if (inRecovery) {
        throw standbyRefused();
      }
      if (alreadyHeld) {
        throw sharedBackendRefused(pid);
      }
      if (!locked) {
        conn.setNetworkTimeout(DIRECT, previousTimeout);
        settled = true;
        conn.close();
        LOG.debug("{} Lock held elsewhere", context);
        return Optional.empty();
      }
      List<String> applied = configureSession(conn, pid);
      conn.setNetworkTimeout(DIRECT, previousTimeout);
      if (Thread.currentThread().isInterrupted()) {
        throw new AdvisoryLockException(
            "Interrupted while acquiring; the session was ended",
            key,
            candidateId,
            new InterruptedException());
      }
      AdvisoryLockLease lease = new AdvisoryLockLease(this, conn, pid, Instant.now(), applied);
      settled = true;
      LOG.debug("{} Lock acquired on backend pid {}", context, pid);
      return Optional.of(lease);
    } catch (SQLException e) {
      throw new AdvisoryLockException(
          "Acquiring failed (SQLState " + e.getSQLState() + "); the session was ended",
          key,
          candidateId,
          e);
    } finally {
      if (!settled) {
        SessionTerminator.endSession(dataSource, conn, false, context);
      }
    }
  }

  private Connection borrow() {
    try {
      return dataSource.getConnection();
    } catch (SQLException e) {
      throw new AdvisoryLockException(
          "Cannot connect to the database (SQLState " + e.getSQLState() + ")", key, candidateId, e);
    }
  }

  /** Bounds our own round trips and leaves autocommit on. */
  private void prepare(Connection conn) throws SQLException {
    conn.setNetworkTimeout(DIRECT, timeoutMillis());
    if (!conn.getAutoCommit()) {
      // A session lock does not care, but an open transaction would idle in it for the term.
      conn.setAutoCommit(true);
    }
  }

  /** Whether this backend already holds the key; binds with {@link LockKey#bindLocks}. */
  private String heldByThisBackendSql() {
    return "EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND"
        + " l.pid = pg_backend_pid() AND l.database = (SELECT oid FROM pg_database WHERE datname"
        + " = current_database()) AND "
        + key.pgLocksPredicate("l")
        + ")";
  }

  /**
   * A session we just borrowed holds the key already: advisory locks are re-entrant, so taking it
   * would succeed and make a second leader. Only a backend shared between clients (a
   * transaction-mode pooler) gets here; we neither lock nor unlock (the lock is someone else's).
   */
  private UnsafeSessionException sharedBackendRefused(int pid) {
    return new UnsafeSessionException(
        LossReason.POOLER_DETECTED,
        "Backend "
            + pid
            + " already holds this lock before we took it: it is shared between clients, as"
            + " behind a transaction-mode pooler such as PgBouncer, so a session lock cannot give"
            + " mutual exclusion. Connect directly or in session mode.",
        key,
        candidateId);
  }

  private UnsafeSessionException standbyRefused() {
    return new UnsafeSessionException(
        LossReason.STANDBY_DETECTED,
        "The server is a hot standby (pg_is_in_recovery() = true): advisory locks there do not"
            + " exclude holders on the primary. Connect to the primary.",
        key,
        candidateId);
  }

  /** Names the session and applies the session settings; detects a backend that moved. */
  private List<String> configureSession(Connection conn, int pid) throws SQLException {
    List<String> names = new ArrayList<>(sessionSettings.keySet());
    List<String> values = new ArrayList<>(sessionSettings.values());
    Array nameArray = conn.createArrayOf("text", names.toArray());
    Array valueArray = conn.createArrayOf("text", values.toArray());
    try (PreparedStatement ps =
        conn.prepareStatement(
            "SELECT pg_backend_pid(), set_config('application_name', ?, false),"
                + " (SELECT coalesce(array_agg(v.name ORDER BY v.ord), '{}')"
                + " FROM unnest(?::text[], ?::text[]) WITH ORDINALITY AS v(name, value, ord)"
                + " WHERE CASE WHEN EXISTS (SELECT 1 FROM pg_settings s WHERE s.name = v.name)"
                + " THEN set_config(v.name, v.value, false) IS NOT NULL ELSE false END)")) {
      ps.setString(1, applicationName());
      ps.setArray(2, nameArray);
      ps.setArray(3, valueArray);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        int second = rs.getInt(1);
        if (second != pid) {
          // No unlock attempt: through the pooler it would reach an arbitrary backend, possibly
          // one holding this key for another client. The lock stays with backend `pid` until the
          // pooler closes that server connection.
          throw new UnsafeSessionException(
              LossReason.POOLER_DETECTED,
              "The backend changed between two statements (pid "
                  + pid
                  + " then "
                  + second
                  + "): a transaction-mode pooler such as PgBouncer is in between, so a session"
                  + " lock cannot give mutual exclusion. Connect directly or in session mode.",
              key,
              candidateId);
        }
        List<String> applied = new ArrayList<>();
        Collections.addAll(applied, (String[]) rs.getArray(3).getArray());
        if (applied.size() < names.size()) {
          List<String> missing = new ArrayList<>(names);
          missing.removeAll(applied);
          LOG.warn(
              "{} The server does not know the session settings {}; skipped", context, missing);
        }
        return Collections.unmodifiableList(applied);
      }
    }
  }

  String applicationName() {
    String name = APPLICATION_NAME_PREFIX + candidateId;
    return name.length() > 63 ? name.substring(0, 63) : name;
  }

  int timeoutMillis() {
    return (int) roundTripTimeout.toMillis();
  }

  /**
   * Opens a waiter: one session, set up like a leader's, that blocks in {@code pg_advisory_lock}
   * until PostgreSQL grants it the lock. Each {@link Waiter#await()} waits at most {@code
   * waitTimeout} (as {@code lock_timeout}) and can be called again to re-arm.
   *
   * @param waitTimeout how long one wait may block; at least 10 ms
   * @return the waiter; close it when done (its session is ended, never pooled)
   * @throws UnsafeSessionException on a hot standby or behind a transaction pooler
   * @throws AdvisoryLockException when the database cannot be reached or fails
   */
  public Waiter openWaiter(Duration waitTimeout) {
    validateTimeout("waitTimeout", waitTimeout);
    if (waitTimeout.toMillis() < 10) {
      throw new IllegalArgumentException(
          "waitTimeout must be at least 10ms, but was " + waitTimeout);
    }
    Connection conn = borrow();
    boolean ok = false;
    try {
      prepare(conn);
      int pid;
      String originalLockTimeout;
      try (PreparedStatement ps =
          conn.prepareStatement(
              "SELECT pg_backend_pid(), pg_is_in_recovery(), current_setting('lock_timeout'), "
                  + heldByThisBackendSql())) {
        key.bindLocks(ps, 1);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          pid = rs.getInt(1);
          if (rs.getBoolean(2)) {
            throw standbyRefused();
          }
          if (rs.getBoolean(4)) {
            throw sharedBackendRefused(pid);
          }
          originalLockTimeout = rs.getString(3);
        }
      }
      List<String> applied = configureSession(conn, pid);
      try (PreparedStatement ps =
          conn.prepareStatement("SELECT set_config('lock_timeout', ?, false)")) {
        ps.setString(1, waitTimeout.toMillis() + "ms");
        ps.execute();
      }
      Waiter waiter = new Waiter(conn, pid, originalLockTimeout, applied, waitTimeout);
      ok = true;
      return waiter;
    } catch (SQLException e) {
      throw new AdvisoryLockException(
          "Opening a waiter failed (SQLState " + e.getSQLState() + "); the session was ended",
          key,
          candidateId,
          e);
    } finally {
      if (!ok) {
        SessionTerminator.endSession(dataSource, conn, false, context);
      }
    }
  }

  /**
   * A session that waits in {@code pg_advisory_lock} for the lock ({@link TakeoverMode#WAIT}). It
   * is never returned to a pool: once it has waited, the server may grant it the lock at any
   * moment, so {@link #close()} ends the session. Thread-safe: {@link #close()} from another thread
   * aborts a wait in progress.
   */
  public final class Waiter implements AutoCloseable {
    private final Connection conn;
    private final int pid;
    private final String originalLockTimeout;
    private final List<String> applied;
    private final Duration waitTimeout;
    private final ReentrantLock io = new ReentrantLock();
    private final AtomicBoolean open = new AtomicBoolean(true);
    private final String sql;

    private Waiter(
        Connection conn,
        int pid,
        String originalLockTimeout,
        List<String> applied,
        Duration waitTimeout) {
      this.conn = conn;
      this.pid = pid;
      this.originalLockTimeout = originalLockTimeout;
      this.applied = applied;
      this.waitTimeout = waitTimeout;
      this.sql = "SELECT pg_advisory_lock(" + key.sqlArguments() + ")::text, pg_backend_pid()";
    }

    /**
     * Returns the backend pid of the waiting session.
     *
     * @return the pid
     */
    public int backendPid() {
      return pid;
    }

    /**
     * Blocks until the lock is granted or the wait timeout passes.
     *
     * @return the lease when granted (this waiter is then used up: its session belongs to the
     *     lease), or empty when the wait timed out (call again to re-arm)
     * @throws AdvisoryLockException when the session fails (it is ended) or the waiter is closed
     */
    public Optional<AdvisoryLockLease> await() {
      io.lock();
      try {
        if (!open.get()) {
          throw new AdvisoryLockException("The waiter is closed", key, candidateId, null);
        }
        int granted;
        try {
          conn.setNetworkTimeout(
              DIRECT, (int) (waitTimeout.toMillis() + roundTripTimeout.toMillis()));
          try (PreparedStatement ps = conn.prepareStatement(sql)) {
            key.bindArguments(ps, 1);
            try (ResultSet rs = ps.executeQuery()) {
              rs.next();
              granted = rs.getInt(2);
            }
          }
        } catch (SQLException e) {
          if ("55P03".equals(e.getSQLState()) && open.get()) {
            return Optional.empty(); // lock_timeout: nobody released it yet; re-arm
          }
          close();
          throw new AdvisoryLockException(
              "Waiting for the lock failed (SQLState "
                  + e.getSQLState()
                  + "); the session was ended",
              key,
              candidateId,
              e);
        }
        if (granted != pid) {
          close();
          throw new UnsafeSessionException(
              LossReason.POOLER_DETECTED,
              "The backend changed from pid "
                  + pid
                  + " to "
                  + granted
                  + ": a transaction-mode pooler is in between",
              key,
              candidateId);
        }
        if (!open.compareAndSet(true, false)) {
          // Closed while the grant arrived: end the session, which releases the lock.
          SessionTerminator.endSession(dataSource, conn, false, context);
          throw new AdvisoryLockException("The waiter was closed", key, candidateId, null);
        }
        try {
          try (PreparedStatement ps =
              conn.prepareStatement("SELECT set_config('lock_timeout', ?, false)")) {
            ps.setString(1, originalLockTimeout);
            ps.execute();
          }
          conn.setNetworkTimeout(DIRECT, 0);
        } catch (SQLException e) {
          SessionTerminator.endSession(dataSource, conn, false, context);
          throw new AdvisoryLockException(
              "Granted, but the session failed right after (SQLState "
                  + e.getSQLState()
                  + "); the session was ended",
              key,
              candidateId,
              e);
        }
        LOG.debug("{} Lock granted to waiting backend pid {}", context, pid);
        return Optional.of(
            new AdvisoryLockLease(AdvisoryLock.this, conn, pid, Instant.now(), applied));
      } finally {
        io.unlock();
      }
    }

    /** Ends the waiting session (aborting a wait in progress). Idempotent; never throws. */
    @Override
    public void close() {
      if (!open.compareAndSet(true, false)) {
        return;
      }
      SessionTerminator.endSession(dataSource, conn, io, context);
    }
  }

  /**
   * Returns who holds this lock now, as far as the connecting role can see.
   *
   * @return the holder, or empty when the lock is free
   * @throws AdvisoryLockException when the database fails (the SQLException is the cause)
   */
  public Optional<LockHolder> currentHolder() {
    try (Connection conn = dataSource.getConnection()) {
      int previous = conn.getNetworkTimeout();
      conn.setNetworkTimeout(DIRECT, timeoutMillis());
      try (PreparedStatement ps =
          conn.prepareStatement(
              "SELECT l.pid, a.application_name, a.usename, host(a.client_addr), a.backend_start"
                  + " FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid"
                  + " WHERE l.locktype = 'advisory' AND l.granted AND l.mode = 'ExclusiveLock'"
                  + " AND l.database = (SELECT oid FROM pg_database WHERE datname ="
                  + " current_database()) AND "
                  + key.pgLocksPredicate("l"))) {
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
                  Optional.ofNullable(since).map(Timestamp::toInstant)));
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
     * Sets the candidate id, shown in logs, exceptions and the session's {@code application_name}.
     * Defaults to {@link AdvisoryLock#defaultCandidateId()}.
     *
     * @param candidateId 1 to 100 printable characters
     * @return this builder
     */
    public Builder candidateId(String candidateId) {
      this.candidateId = validateCandidateId(candidateId);
      return this;
    }

    /**
     * Sets the network timeout of each round trip the lock makes itself (acquire, ownership check,
     * holder lookup); a call that gets no answer in time fails with SQLState 08006 and its session
     * is ended. Defaults to 10 seconds.
     *
     * @param timeout positive, at most 24 days
     * @return this builder
     */
    public Builder roundTripTimeout(Duration timeout) {
      this.roundTripTimeout = validateTimeout("roundTripTimeout", timeout);
      return this;
    }

    /**
     * Sets a server setting on the session once the lock is taken, as {@code set_config(name,
     * value, false)}, e.g. {@code tcp_keepalives_idle}. Settings the server does not know are
     * skipped with a warning. Values are bound as parameters, never spliced into SQL.
     *
     * @param name a setting name, e.g. {@code idle_session_timeout}
     * @param value its value
     * @return this builder
     */
    public Builder sessionSetting(String name, String value) {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(value, "value");
      if (!SETTING_NAME.matcher(name).matches()) {
        throw new IllegalArgumentException(
            "setting name must be a PostgreSQL setting name like tcp_keepalives_idle, but was \""
                + Diagnostics.shorten(name)
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

  static String validateCandidateId(String candidateId) {
    Objects.requireNonNull(candidateId, "candidateId");
    if (candidateId.isEmpty()
        || candidateId.length() > MAX_CANDIDATE_ID
        || candidateId.chars().anyMatch(Character::isISOControl)) {
      throw new IllegalArgumentException(
          "candidateId must be 1 to "
              + MAX_CANDIDATE_ID
              + " printable characters, but was \""
              + Diagnostics.shorten(candidateId)
              + "\"");
    }
    return candidateId;
  }

  static Duration validateTimeout(String name, Duration timeout) {
    Objects.requireNonNull(timeout, name);
    if (timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException(name + " must be positive, but was " + timeout);
    }
    if (timeout.compareTo(Duration.ofMillis(Integer.MAX_VALUE)) > 0) {
      throw new IllegalArgumentException(
          name
              + " must be at most "
              + Duration.ofMillis(Integer.MAX_VALUE)
              + ", but was "
              + timeout);
    }
    return timeout;
  }
}
