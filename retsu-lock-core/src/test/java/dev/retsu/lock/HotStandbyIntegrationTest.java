package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.testing.EmbeddedPostgresServer;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.postgresql.ds.PGSimpleDataSource;

/** Invariant 4: a hot standby grants advisory locks silently, so the lease must refuse it. */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class HotStandbyIntegrationTest {

  private static EmbeddedPostgresServer primary;
  private static EmbeddedPostgresServer standby;

  @BeforeAll
  static void startPair() {
    primary = EmbeddedPostgresServer.startDefault();
    standby = primary.startStreamingReplica();
  }

  @AfterAll
  static void stopPair() {
    if (standby != null) {
      standby.close();
    }
    if (primary != null) {
      primary.close();
    }
  }

  private static PGSimpleDataSource dataSource(EmbeddedPostgresServer server) {
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setUrl(server.jdbcUrl("postgres"));
    ds.setUser("postgres");
    return ds;
  }

  @Test
  @Order(1)
  void refusesToLeadOnAHotStandbyAndTakesNoLockThere() throws SQLException {
    LockKey key = LockKey.named("retsu-test", "standby");
    AdvisoryLock onStandby =
        AdvisoryLock.builder(dataSource(standby), key).candidateId("on-standby").build();

    assertThatThrownBy(onStandby::tryAcquire)
        .isInstanceOfSatisfying(
            UnsafeSessionException.class,
            e -> {
              assertThat(e.reason()).isEqualTo(LossReason.HOT_STANDBY_DETECTED);
              assertThat(e.getMessage()).contains("hot standby").contains("candidate=on-standby");
            });
    try (Connection c = standby.connect("postgres");
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT pg_is_in_recovery(), (SELECT count(*) FROM pg_locks WHERE locktype ="
                    + " 'advisory')")) {
      rs.next();
      assertThat(rs.getBoolean(1)).isTrue();
      assertThat(rs.getLong(2)).isZero();
    }

    // The primary still works for the same key.
    try (AdvisoryLockLease lease =
        AdvisoryLock.of(dataSource(primary), key).tryAcquire().orElseThrow()) {
      assertThat(lease.isHeld()).isTrue();
    }
  }

  @Test
  @Order(2)
  void aLeaderGroupRefusesAHotStandbyAtStartAndTakesNoLockThere() throws SQLException {
    LeaderGroup group =
        LeaderGroup.partitioned(dataSource(standby), "standby-group", 8)
            .candidateId("group-on-standby")
            .build();
    try {
      assertThatThrownBy(() -> group.start(ctx -> {}))
          .isInstanceOfSatisfying(
              UnsafeSessionException.class,
              e -> {
                assertThat(e.reason()).isEqualTo(LossReason.HOT_STANDBY_DETECTED);
                assertThat(e.getMessage()).contains("hot standby");
              });
      assertThat(group.state()).isEqualTo(LeaderGroup.State.FAILED);
      assertThat(group.heldCount()).isZero();
    } finally {
      group.close();
    }
    try (Connection c = standby.connect("postgres");
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")) {
      rs.next();
      assertThat(rs.getLong(1)).as("advisory locks on the standby").isZero();
    }
  }

  @Test
  @Order(3)
  void leadsOnceTheStandbyIsPromoted() throws SQLException {
    try (Connection c = standby.connect("postgres");
        Statement s = c.createStatement()) {
      s.execute("SELECT pg_promote(true, 30)");
    }
    LockKey key = LockKey.named("retsu-test", "promoted");
    AdvisoryLock lock = AdvisoryLock.of(dataSource(standby), key);
    AdvisoryLockLease lease =
        await()
            .atMost(Duration.ofSeconds(30))
            .ignoreExceptionsInstanceOf(UnsafeSessionException.class)
            .until(lock::tryAcquire, java.util.Optional::isPresent)
            .orElseThrow();
    assertThat(lease.isHeld()).isTrue();
    lease.close();
  }
}
