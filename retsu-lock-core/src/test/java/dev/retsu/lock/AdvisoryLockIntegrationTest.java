package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.fakes.DelegatingDataSource;
import dev.retsu.lock.fakes.SharedBackendDataSource;
import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.internal.session.KeySql;
import dev.retsu.lock.internal.session.LockWaiter;
import dev.retsu.lock.oddpool.HidingClassLoader;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.commons.dbcp2.BasicDataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.postgresql.ds.PGSimpleDataSource;

@ExtendWith(PostgresExtension.class)
class AdvisoryLockIntegrationTest {

  private static final Duration PROMPTLY = Duration.ofSeconds(5);

  private static LockKey freshKey() {
    return TestKeys.next();
  }

  @Test
  void oneSessionWinsAndTheOtherAcquiresOnceItCloses(TestDatabase db) {
    LockKey key = freshKey();
    AdvisoryLock a = AdvisoryLock.builder(db.dataSource(), key).candidateId("a").build();
    AdvisoryLock b = AdvisoryLock.builder(db.dataSource(), key).candidateId("b").build();

    AdvisoryLockLease lease = a.tryAcquire().orElseThrow();
    assertThat(b.tryAcquire()).isEmpty();
    assertThat(lease.isHeld()).isTrue();

    lease.close();

    AdvisoryLockLease next =
        await().atMost(PROMPTLY).until(b::tryAcquire, Optional::isPresent).orElseThrow();
    assertThat(next.candidateId()).isEqualTo("b");
    next.close();
  }

  @Test
  void acquireWaitsForTheHolderToReleaseAndGivesUpAfterMaxWait(TestDatabase db) throws Exception {
    LockKey key = freshKey();
    AdvisoryLock a = AdvisoryLock.builder(db.dataSource(), key).candidateId("a").build();
    AdvisoryLock b = AdvisoryLock.builder(db.dataSource(), key).candidateId("b").build();
    AdvisoryLockLease held = a.tryAcquire().orElseThrow();
    // Held elsewhere for longer than the wait: empty, and the waiting session is gone.
    assertThat(b.acquire(Duration.ofMillis(200))).isEmpty();
    assertThat(
            db.queryInts(
                "SELECT count(*)::int FROM pg_stat_activity WHERE application_name = 'retsu-lock:b'"))
        .containsExactly(0);
    // Released while b waits: granted to b, on a session that holds it.
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try {
      Future<Optional<AdvisoryLockLease>> waiting =
          pool.submit(() -> b.acquire(Duration.ofSeconds(20)));
      await()
          .atMost(PROMPTLY)
          .until(
              () ->
                  db.queryInts(
                              "SELECT count(*)::int FROM pg_locks WHERE locktype = 'advisory' AND NOT"
                                  + " granted AND "
                                  + KeySql.pgLocksPredicate(key, "pg_locks"),
                              TestKeys.lockArguments(key))
                          .get(0)
                      == 1);
      held.close();
      try (AdvisoryLockLease lease = waiting.get(20, TimeUnit.SECONDS).orElseThrow()) {
        assertThat(lease.candidateId()).isEqualTo("b");
        assertThat(lease.isHeld()).isTrue();
        assertThat(a.tryAcquire()).isEmpty();
      }
    } finally {
      pool.shutdownNow();
      held.close();
    }
    assertThatThrownBy(() -> b.acquire(Duration.ofMillis(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("maxWait must be at least PT0.01S, but was PT0.001S");
  }

  @Test
  void twoPartKeysLockIndependentlyOfBigintKeys(TestDatabase db) {
    try (AdvisoryLockLease pair =
            AdvisoryLock.of(db.dataSource(), LockKey.of(0, 4242)).tryAcquire().orElseThrow();
        AdvisoryLockLease bigint =
            AdvisoryLock.of(db.dataSource(), LockKey.of(4242L)).tryAcquire().orElseThrow()) {
      assertThat(pair.isHeld()).isTrue();
      assertThat(bigint.isHeld()).isTrue();
      assertThat(AdvisoryLock.of(db.dataSource(), LockKey.of(0, 4242)).tryAcquire()).isEmpty();
    }
  }

  @Test
  void exactlyOneOf32ConcurrentCandidatesWins(TestDatabase db) throws Exception {
    LockKey key = freshKey();
    int n = 32;
    CyclicBarrier start = new CyclicBarrier(n);
    ExecutorService pool = Executors.newFixedThreadPool(n);
    try {
      List<Future<Optional<AdvisoryLockLease>>> results = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        AdvisoryLock lock =
            AdvisoryLock.builder(db.dataSource(), key).candidateId("racer-" + i).build();
        results.add(
            pool.submit(
                () -> {
                  start.await(10, TimeUnit.SECONDS);
                  return lock.tryAcquire();
                }));
      }
      List<AdvisoryLockLease> winners = new ArrayList<>();
      for (Future<Optional<AdvisoryLockLease>> f : results) {
        f.get(30, TimeUnit.SECONDS).ifPresent(winners::add);
      }
      assertThat(winners).hasSize(1);
      assertThat(db.advisoryLockHolders()).containsExactly(winners.get(0).backendPid());
      winners.forEach(AdvisoryLockLease::close);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void standbyAttemptHoldsNoConnection(TestDatabase db) throws SQLException {
    LockKey key = freshKey();
    try (AdvisoryLockLease lease =
        AdvisoryLock.of(db.dataSource(), key).tryAcquire().orElseThrow()) {
      int before = db.clientSessions();
      assertThat(AdvisoryLock.of(db.dataSource(), key).tryAcquire()).isEmpty();
      // at most as many as before: a backend of an earlier test may still be leaving
      await().atMost(PROMPTLY).until(db::clientSessions, n -> n <= before);
      assertThat(lease.isHeld()).isTrue();
    }
  }

  @Test
  void closeEndsTheSessionOfAPlainDataSource(TestDatabase db) throws SQLException {
    assertReleaseEndsSession(db, db.dataSource(), db.dataSource());
  }

  @Test
  void closeEvictsFromHikariSoTheNextBorrowerHoldsNothing(TestDatabase db) throws SQLException {
    try (HikariDataSource pool = hikari(db)) {
      assertReleaseEndsSession(db, pool, pool);
    }
  }

  @Test
  void closeInvalidatesInDbcp2SoTheNextBorrowerHoldsNothing(TestDatabase db) throws SQLException {
    try (BasicDataSource pool = dbcp2(db)) {
      assertReleaseEndsSession(db, pool, pool);
    }
  }

  @Test
  void closeOnAnUnknownPoolWrapperStillEndsThePhysicalSession(TestDatabase db) throws SQLException {
    // A wrapper that hides the pool's eviction method, as framework proxies do.
    try (HikariDataSource pool = hikari(db)) {
      javax.sql.DataSource hidden = new DelegatingDataSource(pool);
      assertReleaseEndsSession(db, hidden, pool);
    }
  }

  @Test
  void aDataSourceWhoseMethodsNameAMissingTypeStillBuildsALockAndItsCloseEndsTheSession(
      TestDatabase db) throws Exception {
    // Looking up its eviction method throws NoClassDefFoundError (a public method names a type
    // its class loader cannot find). The lock is still built, and a release still ends the
    // session, by closing the physical connection instead of evicting.
    javax.sql.DataSource odd = HidingClassLoader.oddPool(db.dataSource());
    assertThatThrownBy(() -> odd.getClass().getMethod("evictConnection", Connection.class))
        .as("the control: this data source's method lookup really fails")
        .isInstanceOf(NoClassDefFoundError.class);
    assertReleaseEndsSession(db, odd, db.dataSource());
  }

  @Test
  void plainCloseOfAPooledHandleWouldLeakTheLockWhichIsWhyWeNeverDoIt(TestDatabase db)
      throws SQLException {
    // Control experiment: proves the pool assertions above can fail.
    LockKey key = freshKey();
    try (HikariDataSource pool = hikari(db)) {
      int pid;
      try (Connection c = pool.getConnection();
          PreparedStatement ps =
              c.prepareStatement("SELECT pg_try_advisory_lock(?), pg_backend_pid()")) {
        ps.setLong(1, key.value());
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          assertThat(rs.getBoolean(1)).isTrue();
          pid = rs.getInt(2);
        }
      }
      try (Connection next = pool.getConnection();
          Statement s = next.createStatement();
          ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
        rs.next();
        assertThat(rs.getInt(1)).isEqualTo(pid);
        assertThat(db.advisoryLocksHeldBy(pid)).isEqualTo(1);
      }
    }
  }

  private void assertReleaseEndsSession(
      TestDatabase db, javax.sql.DataSource source, javax.sql.DataSource borrowFrom)
      throws SQLException {
    LockKey key = freshKey();
    AdvisoryLockLease lease = AdvisoryLock.of(source, key).tryAcquire().orElseThrow();
    int pid = lease.backendPid();
    assertThat(db.advisoryLocksHeldBy(pid)).isEqualTo(1);

    lease.close();
    lease.close(); // idempotent

    await().atMost(PROMPTLY).untilAsserted(() -> assertThat(db.backendExists(pid)).isFalse());
    try (Connection next = borrowFrom.getConnection();
        Statement s = next.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT pg_backend_pid(), (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
                    + " AND pid = pg_backend_pid())")) {
      rs.next();
      assertThat(rs.getInt(1)).isNotEqualTo(pid);
      assertThat(rs.getInt(2)).isZero();
    }
    assertThat(db.advisoryLockHolders()).doesNotContain(pid);
  }

  @Test
  void terminatedBackendIsReportedLostWithItsSqlStateAndCloseStillSucceeds(TestDatabase db)
      throws SQLException {
    LockKey key = freshKey();
    AdvisoryLockLease lease = AdvisoryLock.of(db.dataSource(), key).tryAcquire().orElseThrow();
    assertThat(db.terminateBackend(lease.backendPid())).isTrue();

    assertThatThrownBy(lease::verify)
        .isInstanceOfSatisfying(
            LeadershipLostException.class,
            e -> {
              assertThat(e.reason()).isEqualTo(LossReason.SESSION_LOST);
              assertThat(e.sqlState())
                  .hasValueSatisfying(s -> assertThat(s).isIn("57P01", "08006", "08003"));
              assertThat(e.getCause()).isInstanceOf(SQLException.class);
            });
    assertThat(lease.isHeld()).isFalse();
    lease.close();
    assertThat(lease.isOpen()).isFalse();
    assertThat(AdvisoryLock.of(db.dataSource(), key).tryAcquire())
        .isPresent()
        .get()
        .satisfies(AdvisoryLockLease::close);
  }

  @Test
  void unlockedBehindOurBackIsReportedAsNotHeld(TestDatabase db) throws SQLException {
    LockKey key = freshKey();
    try (AdvisoryLockLease lease =
        AdvisoryLock.of(db.dataSource(), key).tryAcquire().orElseThrow()) {
      lease.withConnection(
          c -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT pg_advisory_unlock(?)")) {
              ps.setLong(1, key.value());
              ps.execute();
            }
            return null;
          });
      assertThatThrownBy(lease::verify)
          .isInstanceOfSatisfying(
              LeadershipLostException.class,
              e -> assertThat(e.reason()).isEqualTo(LossReason.LOCK_NOT_HELD));
    }
  }

  @Test
  void leaseConnectionRunsOnTheLockingSessionAndDiesWithTheLease(TestDatabase db)
      throws SQLException {
    AdvisoryLockLease lease =
        AdvisoryLock.of(db.dataSource(), freshKey()).tryAcquire().orElseThrow();
    Connection c = lease.connection();
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
      rs.next();
      assertThat(rs.getInt(1)).isEqualTo(lease.backendPid());
    }
    c.close(); // does not end the session or return it anywhere
    assertThat(lease.isHeld()).isTrue();
    assertThatThrownBy(() -> c.abort(Runnable::run)).isInstanceOf(SQLException.class);

    lease.close();

    assertThat(c.isClosed()).isTrue();
    assertThatThrownBy(c::createStatement)
        .isInstanceOfSatisfying(
            SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("08003"));
    assertThatThrownBy(() -> lease.withConnection(x -> 1))
        .isInstanceOfSatisfying(
            SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("08003"));
    assertThatThrownBy(lease::verify)
        .isInstanceOfSatisfying(
            LeadershipLostException.class,
            e -> assertThat(e.reason()).isEqualTo(LossReason.CLOSED));
  }

  @Test
  void aBorrowedSessionThatAlreadyHoldsTheKeyIsRefusedAsShared(TestDatabase db)
      throws SQLException {
    // What a transaction-mode pooler does: hand a second client the backend that holds the lock.
    LockKey key = freshKey();
    try (Connection shared = holding(db, key)) {
      assertThatThrownBy(
              () -> AdvisoryLock.of(new SharedBackendDataSource(shared), key).tryAcquire())
          .isInstanceOfSatisfying(
              UnsafeSessionException.class,
              e -> {
                assertThat(e.reason()).isEqualTo(LossReason.POOLER_DETECTED);
                assertThat(e.getMessage()).contains("already holds this lock before we took it");
              });
    }
    LockKey other = freshKey();
    try (Connection shared = holding(db, other)) {
      assertThatThrownBy(
              () ->
                  LockWaiter.open(
                          AdvisoryLock.of(new SharedBackendDataSource(shared), other).spec(),
                          Duration.ofSeconds(1))
                      .await())
          .isInstanceOfSatisfying(
              UnsafeSessionException.class,
              e -> assertThat(e.reason()).isEqualTo(LossReason.POOLER_DETECTED));
    }
  }

  private static Connection holding(TestDatabase db, LockKey key) throws SQLException {
    Connection c = db.connect();
    try (PreparedStatement ps = c.prepareStatement("SELECT pg_advisory_lock(?)")) {
      ps.setLong(1, key.value());
      ps.execute();
    }
    return c;
  }

  @Test
  void currentHolderNamesTheCandidate(TestDatabase db) {
    LockKey key = freshKey();
    AdvisoryLock lock =
        AdvisoryLock.builder(db.dataSource(), key).candidateId("collector-a").build();
    assertThat(lock.currentHolder()).isEmpty();
    try (AdvisoryLockLease lease = lock.tryAcquire().orElseThrow()) {
      LeaderInfo holder = AdvisoryLock.of(db.dataSource(), key).currentHolder().orElseThrow();
      assertThat(holder.pid()).isEqualTo(lease.backendPid());
      assertThat(holder.candidateId()).isEqualTo("collector-a");
      assertThat(holder.token()).isEmpty(); // a plain lease takes no token
      assertThat(holder.foreign()).isFalse();
      assertThat(holder.database()).isEqualTo(db.name());
    }
  }

  @Test
  void sessionSettingsAreAppliedAndUnknownOnesSkipped(TestDatabase db) throws SQLException {
    AdvisoryLock lock =
        AdvisoryLock.builder(db.dataSource(), freshKey())
            .sessionSetting("tcp_keepalives_idle", "7")
            .sessionSetting("retsu_no_such_setting", "1")
            .build();
    try (AdvisoryLockLease lease = lock.tryAcquire().orElseThrow()) {
      assertThat(lease.sessionSettings()).containsExactly("tcp_keepalives_idle");
      String value =
          lease.withConnection(
              c -> {
                try (Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery("SHOW tcp_keepalives_idle")) {
                  rs.next();
                  return rs.getString(1);
                }
              });
      assertThat(value).isEqualTo("7");
    }
  }

  @Test
  void namedKeyMatchesTheSqlFormulaOperatorsUse(TestDatabase db) throws SQLException {
    LockKey key = LockKey.named("retsu", "queue-state-collector");
    try (Connection c = db.connect();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT ('x' || left(encode(sha256(convert_to(?, 'UTF8')), 'hex'), 16))::bit(64)::bigint")) {
      ps.setString(1, "retsu:queue-state-collector");
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        assertThat(rs.getLong(1)).isEqualTo(key.value());
      }
    }
  }

  @Test
  void interruptedAcquireEndsTheSessionAndLeavesTheLockFree(TestDatabase db) throws SQLException {
    LockKey key = freshKey();
    AdvisoryLock lock = AdvisoryLock.of(db.dataSource(), key);
    Thread.currentThread().interrupt();
    try {
      assertThatThrownBy(lock::tryAcquire)
          .isInstanceOf(AdvisoryLockException.class)
          .hasCauseInstanceOf(InterruptedException.class);
    } finally {
      assertThat(Thread.interrupted()).isTrue();
    }
    await().atMost(PROMPTLY).untilAsserted(() -> assertThat(lock.currentHolder()).isEmpty());
  }

  @Test
  void unreachableDatabaseFailsWithOurExceptionAndTheSqlState() {
    PGSimpleDataSource nowhere = new PGSimpleDataSource();
    nowhere.setUrl("jdbc:postgresql://127.0.0.1:1/none");
    nowhere.setUser("postgres");
    nowhere.setPassword("s3cret-do-not-log");
    AdvisoryLock lock = AdvisoryLock.builder(nowhere, LockKey.of(1L)).candidateId("c1").build();
    assertThatThrownBy(lock::tryAcquire)
        .isInstanceOfSatisfying(
            AdvisoryLockException.class,
            e -> {
              assertThat(e.sqlState()).contains("08001");
              assertThat(e.getCause()).isInstanceOf(SQLException.class);
              assertThat(e.candidateId()).isEqualTo("c1");
              assertThat(e.getMessage())
                  .startsWith("Cannot connect to the database (SQLState 08001)")
                  .endsWith("[lock=0x0000000000000001 (1), candidate=c1]")
                  .doesNotContain("s3cret");
            });
  }

  @Test
  void rejectsBadArgumentsNamingThem(TestDatabase db) {
    PGSimpleDataSource ds = db.dataSource();
    assertThatThrownBy(() -> AdvisoryLock.builder(null, LockKey.of(1L)))
        .isInstanceOf(NullPointerException.class)
        .hasMessage("dataSource");
    assertThatThrownBy(() -> AdvisoryLock.builder(ds, null))
        .isInstanceOf(NullPointerException.class)
        .hasMessage("key");
    AdvisoryLock.Builder b = AdvisoryLock.builder(ds, LockKey.of(1L));
    assertThatThrownBy(() -> b.roundTripTimeout(Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("roundTripTimeout must be positive, but was PT-1S");
    assertThatThrownBy(() -> b.roundTripTimeout(Duration.ZERO))
        .hasMessage("roundTripTimeout must be positive, but was PT0S");
    assertThatThrownBy(() -> b.roundTripTimeout(Duration.ofDays(400)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("roundTripTimeout must be at most");
    assertThatThrownBy(() -> b.candidateId(""))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("candidateId must be 1 to 100 printable characters, but was \"\"");
    assertThatThrownBy(() -> b.candidateId("a\nb"))
        .hasMessage("candidateId must be 1 to 100 printable characters, but was \"a\\u000ab\"");
    assertThatThrownBy(() -> b.sessionSetting("x; DROP TABLE y", "1"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("but was \"x; DROP TABLE y\"");
    assertThatThrownBy(() -> b.sessionSetting("application_name", "x"))
        .isInstanceOf(IllegalArgumentException.class);
  }

  static HikariDataSource hikari(TestDatabase db) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(db.jdbcUrl());
    config.setUsername(db.user());
    config.setPassword(db.password());
    config.setMaximumPoolSize(1);
    config.setPoolName("retsu-lock-test");
    return new HikariDataSource(config);
  }

  static BasicDataSource dbcp2(TestDatabase db) {
    BasicDataSource ds = new BasicDataSource();
    ds.setUrl(db.jdbcUrl());
    ds.setUsername(db.user());
    ds.setPassword(db.password());
    ds.setMaxTotal(1);
    ds.setAccessToUnderlyingConnectionAllowed(true);
    return ds;
  }
}
