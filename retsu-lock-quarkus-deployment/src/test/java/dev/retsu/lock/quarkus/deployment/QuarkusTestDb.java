package dev.retsu.lock.quarkus.deployment;

import dev.retsu.lock.testing.TestDatabase;
import dev.retsu.lock.testing.TestPostgres;
import java.sql.Connection;
import java.sql.DriverManager;
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

  Connection connect() throws SQLException {
    return DriverManager.getConnection(url, user, password);
  }
}
