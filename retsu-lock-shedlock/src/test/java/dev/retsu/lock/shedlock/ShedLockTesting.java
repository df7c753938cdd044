package dev.retsu.lock.shedlock;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.testing.TestDatabase;
import java.sql.SQLException;

/** What the ShedLock tests share: a pool on the test database, and the server's view of a key. */
final class ShedLockTesting {

  private ShedLockTesting() {}

  static HikariDataSource pool(TestDatabase db, int size) {
    HikariConfig c = new HikariConfig();
    c.setPoolName("retsu-lock-shedlock-test");
    c.setJdbcUrl(db.jdbcUrl());
    c.setUsername(db.user());
    c.setPassword(db.password());
    c.setMaximumPoolSize(size);
    // fixed-size (minimumIdle unset): HikariCP refills an evicted connection only up to
    // minimumIdle, and every released lock evicts one (HikariPoolRefillIntegrationTest)
    return new HikariDataSource(c);
  }

  /** How many sessions hold the (bigint) key right now, as pg_locks shows it. */
  static int holders(TestDatabase db, LockKey key) throws SQLException {
    return db.advisoryKeyHolders(key.value()).size();
  }

  /** The backend pid holding the key, or -1. */
  static int holderPid(TestDatabase db, LockKey key) throws SQLException {
    return db.advisoryKeyHolders(key.value()).stream().findFirst().orElse(-1);
  }
}
