package dev.retsu.lock.testing;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A new role that can log in and do nothing else (the database's default {@code CONNECT} for
 * PUBLIC): the neighbour every hostile-role test plays, which can still {@code NOTIFY}, name its
 * session, read {@code pg_locks}, and take or queue on any advisory lock. Closing drops what it
 * owns and the role; its sessions must be closed first.
 *
 * @param name the role's name
 * @param password its password
 * @param database the database its data sources connect to
 */
public record LoginOnlyRole(String name, String password, TestDatabase database)
    implements AutoCloseable {

  private static final AtomicLong ROLES = new AtomicLong();

  /**
   * Creates the role on the database's server.
   *
   * @param database where its sessions connect
   * @param prefix the role name's prefix, a lowercase identifier
   * @return the role
   * @throws SQLException when the server refuses
   */
  public static LoginOnlyRole create(TestDatabase database, String prefix) throws SQLException {
    if (!prefix.matches("[a-z_][a-z0-9_]{0,30}")) {
      throw new IllegalArgumentException(
          "prefix must be a lowercase identifier of at most 31 characters, but was " + prefix);
    }
    String name = prefix + "_" + ProcessHandle.current().pid() + "_" + ROLES.incrementAndGet();
    String password = UUID.randomUUID().toString();
    // DDL takes no bind parameters: the name is checked above and the password is a UUID
    database.execute(
        "CREATE ROLE "
            + name
            + " LOGIN PASSWORD '"
            + password
            + "' NOSUPERUSER NOCREATEDB NOCREATEROLE");
    return new LoginOnlyRole(name, password, database);
  }

  /**
   * A new non-pooling data source that logs in as this role.
   *
   * @return the data source
   */
  public PGSimpleDataSource dataSource() {
    PGSimpleDataSource ds = database.dataSource();
    ds.setUser(name);
    ds.setPassword(password);
    return ds;
  }

  /**
   * Opens a session of this role that names itself {@code applicationName} (a candidate's name and
   * token, say) and takes {@code pg_advisory_lock(key)}, waiting for it.
   *
   * @param applicationName the name the session gives itself
   * @param key the advisory lock's bigint key
   * @return the session, holding the key; closing it ends the session
   * @throws SQLException when the server refuses
   */
  public Holder hold(String applicationName, long key) throws SQLException {
    Connection c = dataSource().getConnection();
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT pg_catalog.pg_backend_pid(), pg_catalog.set_config('application_name', ?,"
                + " false), pg_catalog.pg_advisory_lock(?)")) {
      ps.setString(1, applicationName);
      ps.setLong(2, key);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return new Holder(c, rs.getInt(1));
      }
    } catch (SQLException e) {
      c.close();
      throw e;
    }
  }

  /**
   * A session of the role that holds an advisory lock.
   *
   * @param connection its connection
   * @param pid its backend pid
   */
  public record Holder(Connection connection, int pid) implements AutoCloseable {

    /**
     * Lets go of the key, which the session must hold.
     *
     * @param key the advisory lock's bigint key
     * @throws SQLException when the statement fails
     * @throws IllegalStateException when the session did not hold the key
     */
    public void unlock(long key) throws SQLException {
      try (PreparedStatement ps =
          connection.prepareStatement("SELECT pg_catalog.pg_advisory_unlock(?)")) {
        ps.setLong(1, key);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          if (!rs.getBoolean(1)) {
            throw new IllegalStateException("backend " + pid + " did not hold key " + key);
          }
        }
      }
    }

    /** Ends the session. */
    @Override
    public void close() throws SQLException {
      connection.close();
    }
  }

  /** Drops what the role owns in the database, then the role. */
  @Override
  public void close() throws SQLException {
    database.execute("DROP OWNED BY " + name + "; DROP ROLE IF EXISTS " + name);
  }
}
