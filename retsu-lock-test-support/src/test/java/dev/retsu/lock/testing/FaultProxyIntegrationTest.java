package dev.retsu.lock.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Properties;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(PostgresExtension.class)
class FaultProxyIntegrationTest {

  private FaultProxy proxy;
  private TestDatabase db;

  @BeforeEach
  void start(TestDatabase db) {
    this.db = db;
    proxy = FaultProxy.inFrontOf(db.jdbcUrl());
  }

  @AfterEach
  void stop() {
    proxy.close();
  }

  private Connection connect() throws SQLException {
    Properties p = new Properties();
    p.setProperty("user", db.user());
    p.setProperty("password", db.password());
    return DriverManager.getConnection(proxy.rewrite(db.jdbcUrl()), p);
  }

  private static int select(Connection c, int value) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT " + value)) {
      rs.next();
      return rs.getInt(1);
    }
  }

  @Test
  void passesTrafficAndTracksLinks() throws SQLException {
    try (Connection c = connect()) {
      assertThat(select(c, 7)).isEqualTo(7);
      assertThat(proxy.links()).hasSize(1);
    }
  }

  @Test
  void blackholeStallsSilentlyAndHealDeliversTheHeldBytes() throws SQLException {
    try (Connection c = connect()) {
      proxy.blackhole();
      c.setNetworkTimeout(Runnable::run, 500);
      assertThatThrownBy(() -> select(c, 1))
          .isInstanceOfSatisfying(
              SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("08006"));
    }
    proxy.heal();
    try (Connection again = connect()) {
      assertThat(select(again, 2)).isEqualTo(2);
    }
  }

  @Test
  void healedBeforeTheClientGivesUpLosesNothing() throws Exception {
    try (Connection c = connect()) {
      proxy.blackhole();
      Thread healer =
          new Thread(
              () -> {
                try {
                  Thread.sleep(300); // the partition lasts a while; the query must still answer
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
                proxy.heal();
              });
      healer.start();
      c.setNetworkTimeout(Runnable::run, 30_000);
      assertThat(select(c, 3)).isEqualTo(3);
      healer.join();
    }
  }

  @Test
  void resetBreaksTheConnectionAtOnce() throws SQLException {
    try (Connection c = connect()) {
      proxy.resetAll();
      assertThatThrownBy(() -> select(c, 1))
          .isInstanceOfSatisfying(
              SQLException.class, e -> assertThat(e.getSQLState()).startsWith("08"));
    }
  }

  @Test
  void latencyDelaysButDelivers() throws SQLException {
    proxy.latency(Duration.ofMillis(20));
    try (Connection c = connect()) {
      assertThat(select(c, 4)).isEqualTo(4);
    }
    assertThatThrownBy(() -> proxy.latency(Duration.ofMillis(-1)))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
