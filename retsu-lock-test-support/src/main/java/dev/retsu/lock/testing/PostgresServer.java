package dev.retsu.lock.testing;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Properties;

/**
 * A running PostgreSQL server that tests and demos may use.
 *
 * <p>Implementations are thread-safe. Servers started by this module ({@link
 * EmbeddedPostgresServer}) can also be stopped and restarted, for failover tests; servers given
 * from outside cannot, and say so through {@link #supportsRestart()}.
 */
public interface PostgresServer extends AutoCloseable {

  /**
   * Returns a JDBC URL for a database on this server.
   *
   * @param database the database name
   * @return the URL, without credentials
   */
  String jdbcUrl(String database);

  /**
   * Returns the user name to connect with.
   *
   * @return the user name
   */
  String user();

  /**
   * Returns the password to connect with, empty when the server trusts local connections.
   *
   * @return the password, never null
   */
  String password();

  /**
   * Returns where the server came from, for logs.
   *
   * @return a short description
   */
  String describe();

  /**
   * Returns whether {@link #restart(ShutdownMode)} and {@link #stop(ShutdownMode)} work.
   *
   * @return true for servers started by this module
   */
  default boolean supportsRestart() {
    return false;
  }

  /**
   * Stops the server.
   *
   * @param mode how to shut down
   */
  default void stop(ShutdownMode mode) {
    throw new UnsupportedOperationException(describe() + " cannot be stopped by the tests");
  }

  /** Starts a stopped server again, on the same port and data directory. */
  default void start() {
    throw new UnsupportedOperationException(describe() + " cannot be started by the tests");
  }

  /**
   * Stops the server and starts it again on the same port and data directory.
   *
   * @param mode how to shut down
   */
  default void restart(ShutdownMode mode) {
    stop(mode);
    start();
  }

  /**
   * Opens a new physical connection to a database as the server's user.
   *
   * @param database the database name
   * @return a new connection, owned by the caller
   * @throws SQLException when the server cannot be reached
   */
  default Connection connect(String database) throws SQLException {
    Properties props = new Properties();
    props.setProperty("user", user());
    if (!password().isEmpty()) {
      props.setProperty("password", password());
    }
    return DriverManager.getConnection(jdbcUrl(database), props);
  }

  /**
   * Sends SIGKILL to one backend, as the kernel's OOM killer would: the postmaster then ends every
   * session and runs crash recovery before it accepts connections again.
   *
   * @param pid the backend's pid (as {@code pg_backend_pid()} shows it)
   */
  default void killBackend(int pid) {
    throw new UnsupportedOperationException(describe() + " cannot have its backends killed");
  }

  /** Stops the server if this module started it; does nothing for outside servers. */
  @Override
  void close();

  /** How to shut a server down, as {@code pg_ctl stop -m}. */
  enum ShutdownMode {
    /** Disconnects clients, rolls back, shuts down cleanly. */
    FAST,
    /** Quits at once, as after a crash; the next start runs crash recovery. */
    IMMEDIATE,
    /**
     * SIGKILL to the postmaster itself: its processes end once they notice, nothing is written on
     * the way out, and the next start finds the old pid file and runs crash recovery.
     */
    KILL
  }
}
