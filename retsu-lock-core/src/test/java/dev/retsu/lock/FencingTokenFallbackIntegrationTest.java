package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Invariant 8 where the WAL functions are refused (Aurora PostgreSQL reports them as not supported;
 * here a role without EXECUTE on {@code pg_walfile_name}): tokens fall back to (0, xid8), still
 * strictly increasing from term to term, for POLL and WAIT standbys alike.
 */
@ExtendWith(PostgresExtension.class)
class FencingTokenFallbackIntegrationTest {

  private static final Duration WITHIN = Duration.ofSeconds(20);

  /** A role of this database that may not run pg_walfile_name; the data source logs in as it. */
  private static PGSimpleDataSource withoutWalFunctions(TestDatabase db) throws Exception {
    String role = "retsu_nowal_" + Math.abs(db.name().hashCode() % 1000);
    db.execute(
        "DROP ROLE IF EXISTS "
            + role
            + "; CREATE ROLE "
            + role
            + " LOGIN NOSUPERUSER;"
            + " REVOKE EXECUTE ON FUNCTION pg_catalog.pg_walfile_name(pg_lsn) FROM PUBLIC");
    PGSimpleDataSource ds = db.dataSource();
    ds.setUser(role);
    return ds;
  }

  private static LeaderListener recording(List<Term> terms) {
    return new LeaderListener() {
      @Override
      public void onAcquired(Term term) {
        terms.add(term);
      }
    };
  }

  @Test
  void pollTermsWithoutWalFunctionsCarryIncreasingXidTokens(TestDatabase db) throws Exception {
    PGSimpleDataSource ds = withoutWalFunctions(db);
    List<Term> terms = new CopyOnWriteArrayList<>();
    try (LeaderLoop loop =
        LeaderLoop.builder(ds, TestKeys.next())
            .candidateId("nowal-poll")
            .retryInterval(Duration.ofMillis(200))
            .listener(recording(terms))
            .build()) {
      loop.start(ctx -> {});
      await().atMost(WITHIN).until(() -> terms.size() == 1);
      db.terminateBackend(terms.get(0).backendPid());
      await().atMost(WITHIN).until(() -> terms.size() == 2);
    }
    assertThat(terms).allMatch(t -> t.fencingToken().timeline() == 0);
    assertThat(terms.get(0).fencingToken().xid()).isPositive();
    assertThat(terms.get(1).fencingToken().isNewerThan(terms.get(0).fencingToken())).isTrue();
  }

  @Test
  void aWaitTermWithoutWalFunctionsTakesAnXidTokenInItsWait(TestDatabase db) throws Exception {
    PGSimpleDataSource ds = withoutWalFunctions(db);
    LockKey key = TestKeys.next();
    List<Term> terms = new CopyOnWriteArrayList<>();
    AdvisoryLockLease held = AdvisoryLock.of(db.dataSource(), key).tryAcquire().orElseThrow();
    long before;
    try (LeaderLoop standby =
        LeaderLoop.builder(ds, key)
            .candidateId("nowal-wait")
            .takeover(TakeoverMode.WAIT)
            .listener(recording(terms))
            .build()) {
      standby.start(ctx -> {});
      await().atMost(WITHIN).until(() -> db.waitingForAdvisoryLocks("retsu-lock:nowal-wait") == 1);
      before = db.queryInts("SELECT pg_current_xact_id()::text::int").get(0);
      held.close();
      await().atMost(WITHIN).until(() -> terms.size() == 1);
    }
    FencingToken token = terms.get(0).fencingToken();
    assertThat(token.timeline()).isZero();
    assertThat(token.xid()).isGreaterThan(before);
  }

  @Test
  void theSameDatabaseWithWalFunctionsGivesTheTimeline(TestDatabase db) throws Exception {
    withoutWalFunctions(db); // the superuser may still run them: the control
    List<Term> terms = new CopyOnWriteArrayList<>();
    try (LeaderLoop loop =
        LeaderLoop.builder(db.dataSource(), TestKeys.next())
            .candidateId("wal-control")
            .listener(recording(terms))
            .build()) {
      loop.start(ctx -> {});
      await().atMost(WITHIN).until(() -> terms.size() == 1);
    }
    assertThat(terms.get(0).fencingToken().timeline()).isPositive();
  }
}
