package dev.retsu.lock.spring.integration;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.testing.TestDatabase;
import java.sql.SQLException;

/** What the Spring Integration tests share: a pool, and the server's view of a key. */
final class SpringIntegrationTesting {

  private SpringIntegrationTesting() {}

  static HikariDataSource pool(TestDatabase db, String name, int size) {
    HikariConfig c = new HikariConfig();
    c.setPoolName("retsu-lock-si-" + name);
    c.setJdbcUrl(db.jdbcUrl());
    c.setUsername(db.user());
    c.setPassword(db.password());
    c.setMaximumPoolSize(size);
    // fixed-size (minimumIdle unset): HikariCP refills an evicted connection only up to
    // minimumIdle, and every released lock evicts one (HikariPoolRefillIntegrationTest)
    return new HikariDataSource(c);
  }

  /** The backend pid holding the (bigint) key, or -1. */
  static int holderPid(TestDatabase db, LockKey key) throws SQLException {
    return db.advisoryKeyHolders(key.value()).stream().findFirst().orElse(-1);
  }
}
