package dev.retsu.lock.testing;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.locks.ReentrantLock;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A fresh database on the shared test server, created for one test class and dropped after it.
 * Gives non-pooling data sources and a few operator queries that tests assert with. The queries run
 * on one session of their own, kept open between them (tests poll them every few milliseconds; a
 * new connection per poll made the server start and end a backend each time, and a poll failed
 * whenever a connection's start stalled), opened again when the server ended it. Thread-safe.
 */
public final class TestDatabase implements AutoCloseable {

  private final PostgresServer server;
  private final String name;
  private final ReentrantLock adminLock = new ReentrantLock();
  private Connection admin;

  TestDatabase(PostgresServer server, String name) {
    this.server = Objects.requireNonNull(server, "server");
    this.name = Objects.requireNonNull(name, "name");
  }

  /**
   * Creates a new database on a server.
   *
   * @param server the server
   * @param name a lowercase SQL identifier
   * @return the database
   * @throws SQLException when the server refuses
   */
  public static TestDatabase create(PostgresServer server, String name) throws SQLException {
    if (!name.matches("[a-z_][a-z0-9_]{0,62}")) {
      throw new IllegalArgumentException(
          "name must be a lowercase identifier of at most 63 characters, but was " + name);
    }
    try (Connection c = server.connect("postgres");
        Statement s = c.createStatement()) {
      s.execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
      s.execute("CREATE DATABASE " + name);
    }
    return new TestDatabase(server, name);
  }

  /**
   * Returns the server this database lives on.
   *
   * @return the server
   */
  public PostgresServer server() {
    return server;
  }

  /**
   * Returns the database name.
   *
   * @return the name
   */
  public String name() {
    return name;
  }

  /**
   * Returns the JDBC URL of this database, without credentials.
   *
   * @return the URL
   */
  public String jdbcUrl() {
    return server.jdbcUrl(name);
  }

  /**
   * Returns the user to connect as.
   *
   * @return the user name
   */
  public String user() {
    return server.user();
  }

  /**
   * Returns the password to connect with.
   *
   * @return the password, possibly empty
   */
  public String password() {
    return server.password();
  }

  /**
   * Returns a new non-pooling data source: every {@code getConnection()} opens a new session and
   * {@code close()} ends it.
   *
   * @return a data source
   */
  public PGSimpleDataSource dataSource() {
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setUrl(jdbcUrl());
    ds.setUser(server.user());
    if (!server.password().isEmpty()) {
      ds.setPassword(server.password());
    }
    return ds;
  }

  /**
   * Opens a new physical connection.
   *
   * @return a connection the caller closes
   * @throws SQLException when the server cannot be reached
   */
  public Connection connect() throws SQLException {
    return server.connect(name);
  }

  /**
   * Returns the backend pids that hold an advisory lock in this database right now.
   *
   * @return pids, possibly with duplicates when one backend holds several locks
   * @throws SQLException on a database error
   */
  public List<Integer> advisoryLockHolders() throws SQLException {
    return queryInts(
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND database ="
            + " (SELECT oid FROM pg_database WHERE datname = current_database()) ORDER BY pid");
  }

  /**
   * Returns the backend pids that hold one {@code bigint} advisory key in this database right now
   * (the server's view, read on a separate session).
   *
   * @param key the key, as passed to {@code pg_advisory_lock(bigint)}
   * @return pids: empty when nobody holds it, one when a session does
   * @throws SQLException on a database error
   */
  public List<Integer> advisoryKeyHolders(long key) throws SQLException {
    return queryInts(
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1"
            + " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            + " AND classid = ((?::bigint >> 32) & 4294967295)::oid"
            + " AND objid = (?::bigint & 4294967295)::oid",
        key,
        key);
  }

  /**
   * Returns how many advisory locks a backend holds in this database.
   *
   * @param pid the backend pid
   * @return the number of granted advisory locks
   * @throws SQLException on a database error
   */
  public int advisoryLocksHeldBy(int pid) throws SQLException {
    return queryInts(
            "SELECT count(*)::int FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = ?",
            pid)
        .get(0);
  }

  /**
   * Returns whether a backend process is still alive.
   *
   * @param pid the backend pid
   * @return true while {@code pg_stat_activity} lists it
   * @throws SQLException on a database error
   */
  public boolean backendExists(int pid) throws SQLException {
    return !queryInts("SELECT pid FROM pg_stat_activity WHERE pid = ?", pid).isEmpty();
  }

  /**
   * Counts client sessions connected to this database, other than the one asking.
   *
   * @return the number of client backends
   * @throws SQLException on a database error
   */
  public int clientSessions() throws SQLException {
    return queryInts(
            "SELECT count(*)::int FROM pg_stat_activity WHERE datname = current_database()"
                + " AND backend_type = 'client backend' AND pid <> pg_backend_pid()")
        .get(0);
  }

  /**
   * Counts client sessions of this database whose {@code application_name} starts with a prefix.
   *
   * @param prefix the prefix
   * @return the number of sessions
   * @throws SQLException on a database error
   */
  public int clientSessions(String prefix) throws SQLException {
    return queryInts(
            "SELECT count(*)::int FROM pg_stat_activity WHERE datname = current_database()"
                + " AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
                + " AND starts_with(application_name, ?)",
            prefix)
        .get(0);
  }

  /**
   * Counts the sessions with this {@code application_name} that wait for an advisory lock right now
   * (a WAIT standby in its wait).
   *
   * @param applicationName the sessions' {@code application_name}, e.g. {@code retsu-lock:b}
   * @return how many wait
   * @throws SQLException on a database error
   */
  public int waitingForAdvisoryLocks(String applicationName) throws SQLException {
    return queryInts(
            "SELECT count(*)::int FROM pg_stat_activity WHERE application_name = ?"
                + " AND wait_event_type = 'Lock' AND wait_event = 'advisory'",
            applicationName)
        .get(0);
  }

  /**
   * Terminates a backend as an operator would, with {@code pg_terminate_backend}, and waits up to 5
   * seconds for it to exit.
   *
   * @param pid the backend pid
   * @return whether the signal was sent
   * @throws SQLException on a database error
   */
  public boolean terminateBackend(int pid) throws SQLException {
    return onAdmin(
        c -> {
          try (PreparedStatement ps = c.prepareStatement("SELECT pg_terminate_backend(?, 5000)")) {
            ps.setInt(1, pid);
            try (ResultSet rs = ps.executeQuery()) {
              rs.next();
              return rs.getBoolean(1);
            }
          }
        });
  }

  /** Work on the admin session. */
  private interface AdminWork<T> {
    T run(Connection c) throws SQLException;
  }

  /**
   * Runs {@code work} on the admin session, opened when there is none. When the work fails and the
   * session turns out to be gone (the server ended it: a restart, a terminate), the session is
   * dropped and the work runs once on a new one, as a pool replaces a dead connection; any other
   * failure is the work's own and is thrown.
   */
  private <T> T onAdmin(AdminWork<T> work) throws SQLException {
    adminLock.lock();
    try {
      boolean fresh = admin == null;
      if (fresh) {
        admin = connect();
      }
      try {
        return work.run(admin);
      } catch (SQLException e) {
        if (fresh || admin.isValid(2)) {
          throw e;
        }
        closeAdmin();
        admin = connect();
        return work.run(admin);
      }
    } finally {
      adminLock.unlock();
    }
  }

  private void closeAdmin() {
    Connection c = admin;
    admin = null;
    if (c != null) {
      try {
        c.close();
      } catch (SQLException e) {
        // already gone
      }
    }
  }

  /**
   * Runs a query that returns one integer column.
   *
   * @param sql the query, with {@code ?} parameters
   * @param args the parameters
   * @return the values, in order
   * @throws SQLException on a database error
   */
  public List<Integer> queryInts(String sql, Object... args) throws SQLException {
    return onAdmin(
        c -> {
          try (PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
              ps.setObject(i + 1, args[i]);
            }
            List<Integer> out = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                out.add(rs.getInt(1));
              }
            }
            return out;
          }
        });
  }

  /**
   * Runs statements on the admin session, in autocommit.
   *
   * @param sql the statements
   * @throws SQLException on a database error
   */
  public void execute(String sql) throws SQLException {
    onAdmin(
        c -> {
          try (Statement s = c.createStatement()) {
            s.execute(sql);
          }
          return null;
        });
  }

  /** Drops the database, ending any session still connected to it. */
  @Override
  public void close() {
    adminLock.lock();
    try {
      closeAdmin();
    } finally {
      adminLock.unlock();
    }
    try (Connection c = server.connect("postgres");
        Statement s = c.createStatement()) {
      s.execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
    } catch (SQLException e) {
      // The server may be down at the end of a restart test; the database dies with it.
      org.slf4j.LoggerFactory.getLogger(TestDatabase.class)
          .warn("Cannot drop test database {}: {}", name, e.toString());
    }
  }
}
