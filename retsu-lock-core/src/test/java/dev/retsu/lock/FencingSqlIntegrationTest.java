package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.fakes.TestLoops;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The SQL token check from any session: a conditional write passes with the current term's token
 * and changes nothing with a stale one, with nothing installed ({@link FencingSql#isCurrent}) and
 * with the optional function.
 */
@ExtendWith(PostgresExtension.class)
class FencingSqlIntegrationTest {

  private static final Duration WITHIN = Duration.ofSeconds(30);
  private final List<AutoCloseable> open = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (AutoCloseable c : open) {
      c.close();
    }
  }

  private LeaderLoop leader(TestDatabase db, LockKey key, String id) {
    LeaderLoop l =
        TestLoops.fast(LeaderLoop.builder(db.dataSource(), key))
            .candidateId(id)
            .takeover(TakeoverMode.WAIT)
            .build();
    open.add(l);
    l.start(ctx -> ctx.ensureLeader());
    return l;
  }

  private static int fencedUpdate(Connection c, String check) throws Exception {
    try (PreparedStatement ps =
        c.prepareStatement("UPDATE fenced SET v = v + 1 WHERE id = 1 AND " + check)) {
      return ps.executeUpdate();
    }
  }

  @Test
  void theSqlCheckPassesTheCurrentTokenAndRejectsAStaleOneAfterATakeover(TestDatabase db)
      throws Exception {
    for (LockKey key : List.of(TestKeys.next(), LockKey.of(-7, 123_456))) {
      LeaderLoop a = leader(db, key, "sql-a");
      await().atMost(WITHIN).until(a::isLeader);
      FencingToken first = a.currentTerm().orElseThrow().fencingToken();
      LeaderLoop b = leader(db, key, "sql-b");
      a.close();
      await().atMost(WITHIN).until(b::isLeader);
      FencingToken second = b.currentTerm().orElseThrow().fencingToken();

      try (Connection c = db.connect();
          Statement s = c.createStatement()) {
        s.execute("CREATE TABLE IF NOT EXISTS fenced (id int PRIMARY KEY, v int)");
        s.execute("INSERT INTO fenced VALUES (1, 0) ON CONFLICT DO NOTHING");
        assertThat(fencedUpdate(c, FencingSql.isCurrent(key, first))).isZero();
        assertThat(fencedUpdate(c, FencingSql.isCurrent(key, second))).isEqualTo(1);
        // A token that differs in its last digits only is not the current one.
        FencingToken suffix = new FencingToken(second.timeline(), second.redo(), second.xid() % 10);
        assertThat(fencedUpdate(c, FencingSql.isCurrent(key, suffix))).isZero();
      }
      b.close();
    }
  }

  @Test
  void theOptionalFunctionAnswersTheSameOnceInstalled(TestDatabase db) throws Exception {
    LockKey key = TestKeys.next();
    try (Connection c = db.connect();
        Statement s = c.createStatement()) {
      s.execute(FencingSql.functionScript());
    }
    LeaderLoop a = leader(db, key, "fn-a");
    await().atMost(WITHIN).until(a::isLeader);
    FencingToken first = a.currentTerm().orElseThrow().fencingToken();
    String current = "retsu_lock_is_current(" + key.value() + ", '" + first + "')";
    assertThat(db.queryInts("SELECT " + current + "::int")).containsExactly(1);
    a.close();
    assertThat(db.queryInts("SELECT " + current + "::int")).containsExactly(0);
    assertThat(db.queryInts("SELECT retsu_lock_is_current(1, 2, '1/2')::int")).containsExactly(0);
  }
}
