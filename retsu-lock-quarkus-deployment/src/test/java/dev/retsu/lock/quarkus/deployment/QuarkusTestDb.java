package dev.retsu.lock.quarkus.deployment;

import dev.retsu.lock.LockKey;
import dev.retsu.lock.testing.TestDatabase;
import dev.retsu.lock.testing.TestPostgres;
import io.quarkus.test.QuarkusUnitTest;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Map;

/**
 * A database on the project's test server for one Quarkus test class, as configuration keys.
 * Quarkus loads a test class twice (once to build the application, once inside it), so the first
 * load creates the database and leaves its coordinates in system properties, where the second one
 * finds them instead of creating another.
 */
final class QuarkusTestDb {

  private final String url;
  private final String user;
  private final String password;

  private QuarkusTestDb(String url, String user, String password) {
    this.url = url;
    this.user = user;
    this.password = password;
  }

  static QuarkusTestDb named(String name) {
    String key = "retsu.quarkus.test." + name;
    String url = System.getProperty(key + ".url");
    if (url == null) {
      try {
        TestDatabase db = TestDatabase.create(TestPostgres.shared(), name);
        System.setProperty(key + ".url", db.jdbcUrl());
        System.setProperty(key + ".user", db.user());
        System.setProperty(key + ".password", db.password() == null ? "" : db.password());
      } catch (SQLException e) {
        throw new IllegalStateException("Cannot create the test database " + name, e);
      }
    }
    return new QuarkusTestDb(
        System.getProperty(key + ".url"),
        System.getProperty(key + ".user"),
        System.getProperty(key + ".password"));
  }

  /** The default Agroal data source on this database. */
  Map<String, String> datasource() {
    return Map.of(
        "quarkus.datasource.db-kind", "postgresql",
        "quarkus.datasource.jdbc.url", url,
        "quarkus.datasource.username", user,
        "quarkus.datasource.password", password);
  }

  /**
   * The application's default data source on this database.
   *
   * @param app the test application
   * @return the same application
   */
  QuarkusUnitTest on(QuarkusUnitTest app) {
    datasource().forEach(app::overrideConfigKey);
    return app;
  }

  Connection connect() throws SQLException {
    return DriverManager.getConnection(url, user, password);
  }

  /**
   * The backend that holds a key now, seen in {@code pg_locks}.
   *
   * @param key the key
   * @return its pid, or null when nobody holds it
   */
  Integer holderPid(LockKey key) throws SQLException {
    try (Connection c = connect();
        PreparedStatement p =
            c.prepareStatement(
                "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted"
                    + " AND objsubid = 1 AND classid = ((?::bigint >> 32) & 4294967295)::oid"
                    + " AND objid = (?::bigint & 4294967295)::oid")) {
      p.setLong(1, key.value());
      p.setLong(2, key.value());
      try (ResultSet rs = p.executeQuery()) {
        return rs.next() ? rs.getInt(1) : null;
      }
    }
  }
}
