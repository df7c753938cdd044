package dev.retsu.lock.internal.session;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.FencingToken;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * What the statement that starts a term costs the server: a thousand of them, the WAIT grant and
 * the token statement after a POLL win, exactly as the library sends them, on one session. They
 * write only their commit records and wait for no WAL flush: the server's count of WAL writes
 * (PostgreSQL 14 and later) grows by the WAL writer's rounds only, not once per grant, as it would
 * if each commit waited for its flush. Tokens from one session strictly increase.
 */
@ExtendWith(PostgresExtension.class)
class FencingTokenWalIntegrationTest {

  private static final int GRANTS = 1_000;

  /**
   * At most this many WAL writes for a thousand grants (the WAL writer's; 1,000 if each waited).
   */
  private static final long WRITES = 100;

  /** At most this many bytes of WAL per grant: its commit record, with room for a checkpoint. */
  private static final long BYTES_PER_GRANT = 200;

  private record Wal(long lsnBytes, long writes) {}

  /**
   * The WAL position and the server's count of WAL writes: {@code pg_stat_wal.wal_write} up to
   * PostgreSQL 17, the WAL rows of {@code pg_stat_io} from 18. A commit that waits for its flush
   * writes the WAL itself, once per commit (and syncs it, unless the server runs with {@code fsync}
   * off, as the test servers do); an asynchronous commit leaves that to the WAL writer's rounds. A
   * backend reports its own counts at the latest when it ends, so the grants run on a session that
   * is closed before this is read.
   */
  private static Wal wal(TestDatabase db) throws SQLException {
    try (Connection c = db.connect();
        Statement s = c.createStatement()) {
      String syncs =
          c.getMetaData().getDatabaseMajorVersion() >= 18
              ? "(SELECT pg_catalog.sum(writes)::int8 FROM pg_catalog.pg_stat_io WHERE object ="
                  + " 'wal')"
              : "(SELECT wal_write FROM pg_catalog.pg_stat_wal)";
      try (ResultSet rs =
          s.executeQuery(
              "SELECT pg_catalog.pg_wal_lsn_diff(pg_catalog.pg_current_wal_insert_lsn(),"
                  + " '0/0')::int8, "
                  + syncs)) {
        rs.next();
        return new Wal(rs.getLong(1), rs.getLong(2));
      }
    }
  }

  /** Runs {@code grants} on a session of its own and waits until its backend has ended. */
  private static FencingToken onASession(TestDatabase db, Grants grants) throws Exception {
    int pid;
    FencingToken last;
    try (Connection c = db.connect()) {
      pid = backendPid(c);
      last = grants.run(c);
    }
    await().atMost(Duration.ofSeconds(20)).until(() -> !db.backendExists(pid));
    return last;
  }

  private static int backendPid(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT pg_catalog.pg_backend_pid()")) {
      rs.next();
      return rs.getInt(1);
    }
  }

  /** A thousand grants on one session; returns the last token, each checked newer than before. */
  private interface Grants {
    FencingToken run(Connection c) throws SQLException;
  }

  @Test
  void aThousandGrantsWaitForNoFlush(TestDatabase db) throws Exception {
    LockKey key = TestKeys.next();
    try (Connection c = db.connect()) {
      Assumptions.assumeTrue(
          c.getMetaData().getDatabaseMajorVersion() >= 14, "WAL statistics need PostgreSQL 14");
    }
    Wal before = wal(db);
    FencingToken afterWaits =
        onASession(
            db,
            c -> {
              FencingToken last = new FencingToken(0, 0, 0);
              for (int i = 0; i < GRANTS; i++) {
                last = requireNewer(last, waitGrant(c, key));
                try (Statement s = c.createStatement()) {
                  s.execute("SELECT pg_catalog.pg_advisory_unlock_all()");
                }
              }
              return last;
            });
    Wal afterWait = wal(db);
    onASession(
        db,
        c -> {
          FencingToken last = afterWaits;
          for (int i = 0; i < GRANTS; i++) {
            last = requireNewer(last, tokenStatement(c, key));
          }
          return last;
        });
    Wal afterToken = wal(db);

    long waitBytes = afterWait.lsnBytes() - before.lsnBytes();
    long tokenBytes = afterToken.lsnBytes() - afterWait.lsnBytes();
    System.out.printf(
        "a thousand grants: WAIT %d bytes of WAL and %d WAL writes; token statement %d bytes and"
            + " %d WAL writes%n",
        waitBytes,
        afterWait.writes() - before.writes(),
        tokenBytes,
        afterToken.writes() - afterWait.writes());
    assertThat(afterWait.writes() - before.writes()).isLessThan(WRITES);
    assertThat(afterToken.writes() - afterWait.writes()).isLessThan(WRITES);
    assertThat(waitBytes).isLessThan(GRANTS * BYTES_PER_GRANT);
    assertThat(tokenBytes).isLessThan(GRANTS * BYTES_PER_GRANT);
  }

  private static FencingToken requireNewer(FencingToken last, FencingToken token) {
    assertThat(token).isGreaterThan(last);
    return token;
  }

  /** One WAIT statement on a free key: granted at once, the token taken in it. */
  private static FencingToken waitGrant(Connection c, LockKey key) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(SessionSql.waitLock(key, true))) {
      ps.setString(1, "retsu-lock:wal");
      ps.setString(2, "1:" + key.value());
      ps.setString(3, "wal");
      ps.setBoolean(4, false);
      ps.setString(5, "0");
      ps.setString(6, "0");
      KeySql.bindLocks(ps, KeySql.bindLocks(ps, KeySql.bindArguments(ps, 7, key), key), key);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        assertThat(rs.getBoolean(4)).as("granted").isTrue();
        return FencingToken.parse(
            rs.getString(13).substring(rs.getString(13).lastIndexOf('#') + 1));
      }
    }
  }

  /** The token statement a POLL win or a group grant runs after taking its keys. */
  private static FencingToken tokenStatement(Connection c, LockKey key) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(SessionSql.fencingToken(true))) {
      ps.setString(1, "retsu-lock:wal");
      ps.setString(2, "wal");
      ps.setArray(3, c.createArrayOf("text", new String[] {"1:" + key.value()}));
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        String name = rs.getString(5);
        return FencingToken.parse(name.substring(name.lastIndexOf('#') + 1));
      }
    }
  }
}
