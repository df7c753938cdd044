package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.fakes.TestLoops;
import dev.retsu.lock.internal.session.KeySql;
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
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * User SQL on the leader's own session that releases the key or resets the session, where the text
 * the client sends does not say so (a function whose body unlocks, a statement prepared earlier, an
 * escaped name, a server-side prepared statement, {@code RESET ALL}), for a {@link LeaderLoop} and
 * a {@link LeaderGroup} alike, while the task keeps issuing statements. Liveness and ownership are
 * proven apart: the task's own round trips prove the session alive, never that it still holds the
 * key, so an ownership proof runs at least every {@code heartbeatInterval} while the session is
 * used, and at once after text that may release it.
 */
@ExtendWith(PostgresExtension.class)
class UserSqlOwnershipIntegrationTest {

  private static final Duration WITHIN = Duration.ofSeconds(30);
  private static final Duration HEARTBEAT = TestLoops.HEARTBEAT;

  /** Scheduling slack on a loaded two-core machine; the bound itself is one heartbeat. */
  private static final long SLACK_NANOS = TimeUnit.MILLISECONDS.toNanos(150);

  /** How long the task keeps working after the unlock: several heartbeats. */
  private static final long KEEP_WORKING_NANOS = TimeUnit.MILLISECONDS.toNanos(2_500);

  private final List<AutoCloseable> closeables = new ArrayList<>();

  /** The two recipes the engine serves. */
  enum Recipe {
    LOOP,
    GROUP
  }

  @BeforeEach
  void functions(TestDatabase db) throws SQLException {
    db.execute(
        "CREATE OR REPLACE FUNCTION app_cleanup() RETURNS void LANGUAGE sql AS"
            + " 'SELECT pg_advisory_unlock_all()'");
    db.execute(
        "CREATE OR REPLACE FUNCTION app_release(k bigint) RETURNS boolean LANGUAGE sql AS"
            + " 'SELECT pg_advisory_unlock(k)'");
    db.execute("CREATE OR REPLACE FUNCTION app_tidy() RETURNS void LANGUAGE sql AS 'RESET ALL'");
  }

  @AfterEach
  void close() throws Exception {
    for (AutoCloseable c : closeables) {
      c.close();
    }
  }

  /**
   * What one term of the scenario's task saw: when the unlock ran, every passed check after it, and
   * how the term ended.
   */
  static final class Seen {
    final AtomicLong unlockedAt = new AtomicLong();
    final List<Long> passesAfterUnlock = new CopyOnWriteArrayList<>();
    final AtomicReference<Object> outcome = new AtomicReference<>();

    /** Opened when the scenario is ready for the unlock (a standby waits for the key). */
    final CountDownLatch go = new CountDownLatch(1);

    long lastPassAfterUnlock() {
      return passesAfterUnlock.stream().mapToLong(Long::longValue).max().orElse(unlockedAt.get());
    }
  }

  /**
   * Runs {@code sql} as user code in the first term of the key, then keeps issuing {@code SELECT 1}
   * and {@code ensureLeader()} for a few heartbeats, recording each passed check.
   */
  private static void unlockThenKeepWorking(LeaderContext ctx, Seen seen, String sql)
      throws SQLException, InterruptedException {
    if (seen.unlockedAt.get() != 0 || !seen.go.await(20, TimeUnit.SECONDS)) {
      return;
    }
    Connection c = ctx.connection();
    seen.unlockedAt.set(System.nanoTime());
    try (Statement s = c.createStatement()) {
      s.execute(sql);
    }
    long until = System.nanoTime() + KEEP_WORKING_NANOS;
    try {
      while (System.nanoTime() < until) {
        try (Statement s = c.createStatement()) {
          s.execute("SELECT 1");
        }
        long before = System.nanoTime();
        ctx.ensureLeader();
        seen.passesAfterUnlock.add(before);
        Thread.sleep(20);
      }
      seen.outcome.set("still leading");
    } catch (LeadershipLostException e) {
      seen.outcome.set(e.reason());
    } catch (SQLException | InterruptedException e) {
      // The term ended under the task: its statement was refused (08003), or the task was
      // interrupted. The check says why.
      try {
        ctx.ensureLeader();
        seen.outcome.set("still leading after " + e);
      } catch (LeadershipLostException lost) {
        seen.outcome.set(lost.reason());
      }
    }
  }

  private LeaderLoop loop(TestDatabase db, LockKey key, String id, LeaderTask task) {
    return loop(db, key, id, Duration.ofMinutes(1), task);
  }

  private LeaderLoop loop(
      TestDatabase db, LockKey key, String id, Duration refreshInterval, LeaderTask task) {
    LeaderLoop loop =
        TestLoops.fast(LeaderLoop.builder(db.dataSource(), key))
            .candidateId(id)
            .refreshInterval(refreshInterval)
            .refreshTimeout(Duration.ofSeconds(30))
            .build();
    closeables.add(loop);
    loop.start(task);
    return loop;
  }

  private LeaderGroup group(TestDatabase db, List<LockKey> keys, String id, LeaderTask task) {
    return group(db, keys, id, Duration.ofMinutes(1), task);
  }

  /**
   * A member whose key refreshes may run for almost 3 s: a refresh holds the session's worker, so
   * refreshTimeout must stay below selfFenceAfter (3 s), which stays 1 s below the server bound (4
   * s: keepalives 2 s + 2 x 1 s; idle_session_timeout 5 s).
   */
  private LeaderGroup group(
      TestDatabase db, List<LockKey> keys, String id, Duration refreshInterval, LeaderTask task) {
    LeaderGroup group =
        LeaderGroup.builder(
                db.dataSource(), "usersql" + Long.toHexString(TestKeys.nextValue()), keys)
            .candidateId(id)
            .sessions(1)
            .refreshInterval(refreshInterval)
            .refreshTimeout(Duration.ofMillis(2_900))
            .timing(
                FailoverTiming.DEFAULT
                    .withHeartbeatInterval(HEARTBEAT)
                    .withSelfFenceAfter(Duration.ofSeconds(3))
                    .withServerKeepalives(Duration.ofSeconds(2), Duration.ofSeconds(1), 2)
                    .withServerIdleSessionTimeout(Duration.ofSeconds(5))
                    .withRoundTripTimeout(Duration.ofSeconds(2)))
            .membershipInterval(Duration.ofMillis(250))
            .build();
    closeables.add(group);
    group.start(task);
    return group;
  }

  /** Defect 1: a function whose body unlocks, while the task never stops issuing statements. */
  @ParameterizedTest
  @EnumSource(Recipe.class)
  void aFunctionThatUnlocksIsFoundWithinOneHeartbeatWhileTheTaskKeepsIssuingStatements(
      Recipe recipe, TestDatabase db) throws Exception {
    Seen seen = new Seen();
    if (recipe == Recipe.LOOP) {
      LockKey key = TestKeys.next();
      LeaderLoop a =
          loop(db, key, "a", ctx -> unlockThenKeepWorking(ctx, seen, "SELECT app_cleanup()"));
      await().atMost(WITHIN).until(a::isLeader);
      // A WAIT standby is granted the key the moment the function released it.
      LeaderLoop b =
          TestLoops.fast(LeaderLoop.builder(db.dataSource(), key))
              .candidateId("b")
              .takeover(TakeoverMode.WAIT)
              .build();
      closeables.add(b);
      b.start(ctx -> {});
      await()
          .atMost(WITHIN)
          .until(
              () ->
                  db.queryInts(
                              "SELECT count(*)::int FROM pg_locks WHERE locktype = 'advisory' AND"
                                  + " NOT granted AND "
                                  + KeySql.pgLocksPredicate(key, "pg_locks"),
                              TestKeys.lockArguments(key))
                          .get(0)
                      == 1);
      seen.go.countDown();
      await().atMost(WITHIN).until(b::isLeader);
    } else {
      seen.go.countDown();
      List<LockKey> keys = List.of(TestKeys.next(), TestKeys.next(), TestKeys.next());
      LockKey victim = keys.get(0);
      Map<LockKey, Integer> refreshes = new ConcurrentHashMap<>();
      LeaderGroup g =
          group(
              db,
              keys,
              "a",
              ctx -> {
                refreshes.merge(ctx.term().key(), 1, Integer::sum);
                if (ctx.term().key().equals(victim)) {
                  unlockThenKeepWorking(
                      ctx, seen, "SELECT app_release(" + victim.value() + "::int8)");
                }
              });
      await().atMost(WITHIN).until(() -> seen.outcome.get() != null);
      // Only that key's term ended: the others are still in their first terms.
      assertThat(g.currentTerm(keys.get(1)).orElseThrow().number()).isEqualTo(1);
      assertThat(g.currentTerm(keys.get(2)).orElseThrow().number()).isEqualTo(1);
    }
    await().atMost(WITHIN).until(() -> seen.outcome.get() != null);
    assertThat(seen.outcome.get()).isEqualTo(LossReason.LOCK_NOT_HELD);
    long stale = seen.lastPassAfterUnlock() - seen.unlockedAt.get();
    assertThat(stale)
        .as(
            "ensureLeader() passed %d ms after the function released the key (%d passes); the"
                + " bound is one heartbeatInterval, %d ms",
            TimeUnit.NANOSECONDS.toMillis(stale),
            seen.passesAfterUnlock.size(),
            HEARTBEAT.toMillis())
        .isLessThan(HEARTBEAT.toNanos() + SLACK_NANOS);
  }

  /** How user code releases the key where its text at that moment does not say so. */
  enum Hidden {
    /** A statement prepared in an earlier refresh, executed now (no text is sent). */
    CACHED_PREPARED_STATEMENT,
    /** The function name written with a Unicode escape. */
    ESCAPED_NAME,
    /** A server-side prepared statement, executed by name. */
    SERVER_SIDE_PREPARE
  }

  /**
   * Defect 2: text that may release the key makes the next check a full ownership proof, even when
   * it reaches the session as a cached statement, an escaped name or a server-side EXECUTE: the
   * check right after it fails, with no stale pass at all.
   */
  @ParameterizedTest
  @EnumSource(Hidden.class)
  void hiddenUnlockingSqlFailsTheVeryNextCheckOnALoop(Hidden hidden, TestDatabase db)
      throws Exception {
    AtomicReference<Object> outcome = new AtomicReference<>();
    AtomicReference<PreparedStatement> cached = new AtomicReference<>();
    loop(
        db,
        TestKeys.next(),
        "a",
        TestLoops.REFRESH,
        ctx -> hiddenUnlock(ctx, hidden, cached, outcome));
    await().atMost(WITHIN).until(() -> outcome.get() != null);
    assertThat(outcome.get()).isEqualTo(LossReason.LOCK_NOT_HELD);
  }

  @ParameterizedTest
  @EnumSource(Hidden.class)
  void hiddenUnlockingSqlFailsTheVeryNextCheckInAGroup(Hidden hidden, TestDatabase db)
      throws Exception {
    AtomicReference<Object> outcome = new AtomicReference<>();
    AtomicReference<PreparedStatement> cached = new AtomicReference<>();
    LockKey key = TestKeys.next();
    // The key's refreshes come every 100 ms so the second one follows soon.
    group(
        db,
        List.of(key),
        "a",
        Duration.ofMillis(100),
        ctx -> hiddenUnlock(ctx, hidden, cached, outcome));
    await().atMost(WITHIN).until(() -> outcome.get() != null);
    assertThat(outcome.get()).isEqualTo(LossReason.LOCK_NOT_HELD);
  }

  /**
   * First refresh: prepares the hidden unlock (and proves the key is still held after it). Second
   * refresh of the same term: runs it, then checks at once.
   */
  private static void hiddenUnlock(
      LeaderContext ctx,
      Hidden hidden,
      AtomicReference<PreparedStatement> cached,
      AtomicReference<Object> outcome)
      throws SQLException {
    if (outcome.get() != null) {
      return;
    }
    Connection c = ctx.connection();
    if (cached.get() == null) {
      switch (hidden) {
        case CACHED_PREPARED_STATEMENT ->
            cached.set(c.prepareStatement("SELECT pg_advisory_unlock_all()"));
        case SERVER_SIDE_PREPARE -> {
          try (Statement s = c.createStatement()) {
            s.execute("PREPARE app_cleanup AS SELECT pg_advisory_unlock_all()");
          }
          cached.set(c.prepareStatement("SELECT 1")); // marks the first refresh as done
        }
        case ESCAPED_NAME -> cached.set(c.prepareStatement("SELECT 1"));
      }
      ctx.ensureLeader(); // nothing was released yet
      return;
    }
    switch (hidden) {
      case CACHED_PREPARED_STATEMENT -> cached.get().execute();
      case SERVER_SIDE_PREPARE -> {
        try (Statement s = c.createStatement()) {
          s.execute("EXECUTE app_cleanup");
        }
      }
      case ESCAPED_NAME -> {
        try (Statement s = c.createStatement()) {
          s.execute("SELECT U&\"pg_advisory_\\0075nlock_all\"()");
        }
      }
    }
    try {
      ctx.ensureLeader();
      outcome.set("passed");
    } catch (LeadershipLostException e) {
      outcome.set(e.reason());
    }
  }

  /**
   * Defect 3: {@code RESET ALL} on the leader's session clears the server-side bounds (and the
   * session marker) without releasing the key. The next ownership proof applies them again, so a
   * paused leader stays bounded by the server; the term goes on, because the key is still held. As
   * plain text the next check does it at once; through a function, within one heartbeat.
   */
  @ParameterizedTest
  @EnumSource(Recipe.class)
  void resetAllIsUndoneByTheNextOwnershipProof(Recipe recipe, TestDatabase db) throws Exception {
    AtomicReference<List<String>> afterPlain = new AtomicReference<>();
    AtomicReference<List<String>> afterFunction = new AtomicReference<>();
    AtomicReference<Object> failure = new AtomicReference<>();
    LeaderTask task =
        ctx -> {
          if (afterFunction.get() != null) {
            return;
          }
          try {
            Connection c = ctx.connection();
            try (Statement s = c.createStatement()) {
              s.execute("RESET ALL");
            }
            ctx.ensureLeader();
            afterPlain.set(bounds(c));
            try (Statement s = c.createStatement()) {
              s.execute("SELECT app_tidy()");
            }
            long until = System.nanoTime() + HEARTBEAT.toNanos() + SLACK_NANOS;
            while (System.nanoTime() < until) {
              try (Statement s = c.createStatement()) {
                s.execute("SELECT 1");
              }
              ctx.ensureLeader();
              Thread.sleep(20);
            }
            afterFunction.set(bounds(c));
          } catch (LeadershipLostException e) {
            failure.set(e);
            throw e;
          }
        };
    if (recipe == Recipe.LOOP) {
      loop(db, TestKeys.next(), "a", task);
    } else {
      group(db, List.of(TestKeys.next()), "a", task);
    }
    await().atMost(WITHIN).until(() -> afterFunction.get() != null || failure.get() != null);
    assertThat(failure.get()).isNull();
    // idle_session_timeout, tcp_keepalives_idle, the marker set again
    List<String> applied =
        recipe == Recipe.LOOP ? List.of("4s", "1", "true") : List.of("5s", "2", "true");
    assertThat(afterPlain.get()).isEqualTo(applied);
    assertThat(afterFunction.get()).isEqualTo(applied);
  }

  private static List<String> bounds(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT current_setting('idle_session_timeout'),"
                    + " current_setting('tcp_keepalives_idle'),"
                    + " coalesce(current_setting('retsu.lock_session', true), '') <> ''")) {
      rs.next();
      return List.of(rs.getString(1), rs.getString(2), String.valueOf(rs.getBoolean(3)));
    }
  }
}
