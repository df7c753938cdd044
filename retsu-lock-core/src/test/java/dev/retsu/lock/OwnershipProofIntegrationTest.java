package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.internal.session.KeySql;
import dev.retsu.lock.internal.session.SessionSql;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The ownership proof and the standby attempt do not read {@code pg_locks} on their common paths
 * (their cost must not grow with the server's lock table), and stay sound: whatever user code runs
 * on the lease's session is followed by a full proof, and a session whose settings were reset stops
 * proving ownership.
 */
@ExtendWith(PostgresExtension.class)
class OwnershipProofIntegrationTest {

  private static AdvisoryLock lock(TestDatabase db, LockKey key, String id) {
    return AdvisoryLock.builder(db.dataSource(), key).candidateId(id).build();
  }

  @Test
  void proofsOfAnUntouchedSessionDoNotReadTheLockTableButTheFirstAfterUserSqlDoes(TestDatabase db)
      throws Exception {
    LockKey key = TestKeys.next();
    try (AdvisoryLockLease lease = lock(db, key, "a").tryAcquire().orElseThrow()) {
      for (int i = 0; i < 5; i++) {
        lease.verify();
      }
      assertThat(lease.fullProofs()).isZero();

      try (Statement s = lease.connection().createStatement()) {
        s.execute("SELECT 1");
      }
      lease.verify();
      assertThat(lease.fullProofs()).isEqualTo(1);
      lease.verify();
      lease.verify();
      assertThat(lease.fullProofs()).isEqualTo(1);
    }
  }

  @Test
  void aFunctionThatUnlocksThroughTheViewIsCaughtByTheNextProof(TestDatabase db) throws Exception {
    LockKey key = TestKeys.next();
    db.execute(
        "CREATE OR REPLACE FUNCTION app_cleanup() RETURNS void LANGUAGE sql AS"
            + " 'SELECT pg_catalog.pg_advisory_unlock_all()'");
    try (AdvisoryLockLease lease = lock(db, key, "a").tryAcquire().orElseThrow()) {
      lease.verify();
      // The call's text names no unlock: only the rule "user SQL ran, read pg_locks" catches it.
      try (Statement s = lease.connection().createStatement()) {
        s.execute("SELECT app_cleanup()");
      }
      assertThatThrownBy(lease::verify)
          .isInstanceOf(LeadershipLostException.class)
          .extracting(e -> ((LeadershipLostException) e).reason())
          .isEqualTo(LossReason.LOCK_NOT_HELD);
      assertThat(lock(db, key, "b").tryAcquire()).hasValueSatisfying(AdvisoryLockLease::close);
    }
  }

  @Test
  void resetAllOnTheLeaseSessionIsUndoneByTheNextVerifyAndDiscardAllEndsOwnership(TestDatabase db)
      throws Exception {
    LockKey key = TestKeys.next();
    try (AdvisoryLockLease lease = lock(db, key, "a").tryAcquire().orElseThrow()) {
      try (Statement s = lease.connection().createStatement()) {
        s.execute("RESET ALL"); // clears application_name and the marker, keeps the key
      }
      lease.verify(); // the key is still held: the settings are applied again
      try (Statement s = lease.connection().createStatement();
          ResultSet rs = s.executeQuery("SELECT current_setting('application_name')")) {
        rs.next();
        assertThat(rs.getString(1)).isEqualTo("retsu-lock:a");
      }
      try (Statement s = lease.connection().createStatement()) {
        s.execute("DISCARD ALL"); // releases every advisory lock of the session
      }
      assertThatThrownBy(lease::verify)
          .isInstanceOf(LeadershipLostException.class)
          .extracting(e -> ((LeadershipLostException) e).reason())
          .isEqualTo(LossReason.LOCK_NOT_HELD);
    }
  }

  @Test
  void anAttemptOnAKeyHeldElsewhereNeverReadsTheLockTable(TestDatabase db) throws Exception {
    LockKey key = TestKeys.next();
    try (AdvisoryLockLease held = lock(db, key, "a").tryAcquire().orElseThrow()) {
      assertThat(held.isOpen()).isTrue();
      assertThat(lockTableScans(db, key)).as("pg_lock_status loops while held").containsOnly(0);
    }
    assertThat(lockTableScans(db, key)).as("pg_lock_status loops when free").containsOnly(1);
  }

  /** EXPLAIN ANALYZE of one attempt's statement: the loops of each pg_lock_status scan. */
  private static List<Integer> lockTableScans(TestDatabase db, LockKey key) throws SQLException {
    List<Integer> loops = new ArrayList<>();
    try (Connection c = db.connect();
        PreparedStatement ps =
            c.prepareStatement("EXPLAIN (ANALYZE, FORMAT TEXT) " + SessionSql.tryLock(key))) {
      ps.setArray(1, c.createArrayOf("text", new Object[] {SessionSql.MARKER}));
      ps.setArray(2, c.createArrayOf("text", new Object[] {"test-marker"}));
      int next = KeySql.bindArguments(ps, 3, key);
      next = KeySql.bindLocks(ps, next, key);
      next = KeySql.bindArguments(ps, next, key);
      KeySql.bindArguments(ps, next, key);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          String line = rs.getString(1);
          if (line.contains("pg_lock_status")) {
            loops.add(line.contains("never executed") ? 0 : loopsOf(line));
          }
        }
      }
    }
    assertThat(loops).as("the attempt's plan scans pg_lock_status somewhere").isNotEmpty();
    return loops;
  }

  private static int loopsOf(String planLine) {
    int at = planLine.lastIndexOf("loops=");
    return Integer.parseInt(planLine.substring(at + 6).replaceAll("\\D.*$", ""));
  }
}
