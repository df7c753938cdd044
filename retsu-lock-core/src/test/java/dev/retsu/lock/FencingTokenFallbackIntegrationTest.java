package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.internal.session.TokenMode;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Invariant 8 where a server does not support the functions the full token reads (Aurora PostgreSQL
 * reports the WAL functions as not supported): tokens fall back to (0, 0, xid8) with their commit
 * flushed, still strictly increasing from term to term, for POLL and WAIT standbys alike. A
 * built-in function cannot be made to refuse here, so these data sources are told to use the
 * fallback, as the answer 0A000 would; the SQL that runs is the fallback's own. A role that is
 * merely refused EXECUTE (42501) takes no term at all: its rights can change while terms run, and a
 * fallback term after a full one would sort below it.
 */
@ExtendWith(PostgresExtension.class)
class FencingTokenFallbackIntegrationTest {

  private static final Duration WITHIN = Duration.ofSeconds(20);

  /** A data source of its own that takes fallback tokens. */
  private static PGSimpleDataSource fallback(TestDatabase db) {
    PGSimpleDataSource ds = db.dataSource();
    TokenMode.useFallback(ds);
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
  void pollTermsInTheFallbackCarryIncreasingXidTokens(TestDatabase db) throws Exception {
    PGSimpleDataSource ds = fallback(db);
    List<Term> terms = new CopyOnWriteArrayList<>();
    try (LeaderLoop loop =
        LeaderLoop.builder(ds, TestKeys.next())
            .candidateId("fallback-poll")
            .retryInterval(Duration.ofMillis(200))
            .listener(recording(terms))
            .build()) {
      loop.start(ctx -> {});
      await().atMost(WITHIN).until(() -> terms.size() == 1);
      db.terminateBackend(terms.get(0).backendPid());
      await().atMost(WITHIN).until(() -> terms.size() == 2);
    }
    assertThat(terms).allMatch(t -> t.fencingToken().timeline() == 0);
    assertThat(terms).allMatch(t -> t.fencingToken().redo() == 0);
    assertThat(terms.get(0).fencingToken().xid()).isPositive();
    assertThat(terms.get(1).fencingToken().isNewerThan(terms.get(0).fencingToken())).isTrue();
  }

  @Test
  void aWaitTermInTheFallbackTakesAFlushedXidTokenInItsWait(TestDatabase db) throws Exception {
    PGSimpleDataSource ds = fallback(db);
    LockKey key = TestKeys.next();
    List<Term> terms = new CopyOnWriteArrayList<>();
    AdvisoryLockLease held = AdvisoryLock.of(db.dataSource(), key).tryAcquire().orElseThrow();
    long before;
    try (LeaderLoop standby =
        LeaderLoop.builder(ds, key)
            .candidateId("fallback-wait")
            .takeover(TakeoverMode.WAIT)
            .listener(recording(terms))
            .build()) {
      standby.start(ctx -> {});
      await()
          .atMost(WITHIN)
          .until(() -> db.waitingForAdvisoryLocks("retsu-lock:fallback-wait") == 1);
      before = db.queryInts("SELECT pg_current_xact_id()::text::int").get(0);
      held.close();
      await().atMost(WITHIN).until(() -> terms.size() == 1);
    }
    FencingToken token = terms.get(0).fencingToken();
    assertThat(token.timeline()).isZero();
    assertThat(token.redo()).isZero();
    assertThat(token.xid()).isGreaterThan(before);
  }

  @Test
  void aRoleRefusedTheFunctionsTakesNoTermUntilGrantedAndNeverAFallbackToken(TestDatabase db)
      throws Exception {
    String role = "retsu_nocontrol_" + Math.abs(db.name().hashCode() % 1000);
    db.execute(
        "DROP ROLE IF EXISTS "
            + role
            + "; CREATE ROLE "
            + role
            + " LOGIN NOSUPERUSER;"
            + " REVOKE EXECUTE ON FUNCTION pg_catalog.pg_control_checkpoint() FROM PUBLIC");
    PGSimpleDataSource ds = db.dataSource();
    ds.setUser(role);
    List<Term> terms = new CopyOnWriteArrayList<>();
    List<Throwable> failures = new CopyOnWriteArrayList<>();
    try (LeaderLoop loop =
        LeaderLoop.builder(ds, TestKeys.next())
            .candidateId("refused")
            .retryInterval(Duration.ofMillis(200))
            .failurePolicy(FailurePolicy.STEP_DOWN)
            .listener(
                new LeaderListener() {
                  @Override
                  public void onAcquired(Term term) {
                    terms.add(term);
                  }

                  @Override
                  public void onAttempt(AttemptResult result, Duration took, Throwable error) {
                    if (error != null) {
                      failures.add(error);
                    }
                  }
                })
            .build()) {
      loop.start(ctx -> {});
      await().atMost(WITHIN).until(() -> failures.size() >= 2);
      assertThat(terms).isEmpty();
      assertThat(failures.get(0))
          .hasStackTraceContaining("42501")
          .hasStackTraceContaining("GRANT EXECUTE ON FUNCTION");

      db.execute("GRANT EXECUTE ON FUNCTION pg_catalog.pg_control_checkpoint() TO " + role);

      await().atMost(WITHIN).until(() -> terms.size() == 1);
    }
    FencingToken token = terms.get(0).fencingToken();
    assertThat(token.timeline()).isPositive();
    assertThat(token.redo()).isPositive();
  }

  @Test
  void aServerThatSupportsTheFunctionsGivesTheFullToken(TestDatabase db) throws Exception {
    List<Term> terms = new CopyOnWriteArrayList<>();
    try (LeaderLoop loop =
        LeaderLoop.builder(db.dataSource(), TestKeys.next())
            .candidateId("full-control")
            .listener(recording(terms))
            .build()) {
      loop.start(ctx -> {});
      await().atMost(WITHIN).until(() -> terms.size() == 1);
    }
    assertThat(terms.get(0).fencingToken().timeline()).isPositive();
    assertThat(terms.get(0).fencingToken().redo()).isPositive();
  }
}
