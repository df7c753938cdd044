package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.fakes.DownUntilOpened;
import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.fakes.TestLoops;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * {@link LeaderWatch}: every watcher sees a key's leader changes in token order, never twice, for
 * graceful changes within milliseconds and for crashes (kill -9 of a leader JVM, a terminated
 * session) within the check interval, with one session per watch whatever the number of keys, and
 * no snapshot held. Also {@link LeaderInfo} from the leader and from SQL, and {@link
 * LeaderListener#onLeaderChanged} for participants.
 */
@ExtendWith(PostgresExtension.class)
class LeaderWatchIntegrationTest {

  private static final Duration WITHIN = Duration.ofSeconds(30);
  private final List<AutoCloseable> open = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (int i = open.size() - 1; i >= 0; i--) {
      open.get(i).close();
    }
  }

  private <T extends AutoCloseable> T track(T c) {
    open.add(c);
    return c;
  }

  /** What one watcher heard about one key. */
  static final class Heard implements LeaderChangeListener {
    final List<LeaderChange> changes = new CopyOnWriteArrayList<>();

    @Override
    public void onLeaderChanged(LeaderChange change) {
      changes.add(change);
    }

    /** Each change as {@code CAUSE candidate} or {@code CAUSE -}. */
    List<String> summary() {
      List<String> out = new ArrayList<>();
      for (LeaderChange c : changes) {
        out.add(c.cause() + " " + c.leader().map(LeaderInfo::candidateId).orElse("-"));
      }
      return out;
    }

    /** The tokens of the leaders heard, in order: strictly increasing, none twice. */
    void assertTokenOrder() {
      FencingToken last = null;
      LeaderChange previous = null;
      for (LeaderChange c : changes) {
        if (previous != null) {
          assertThat(sameLeader(previous, c)).as("a change repeated: %s", c).isFalse();
        }
        previous = c;
        Optional<FencingToken> t = c.leader().flatMap(LeaderInfo::token);
        if (t.isPresent()) {
          if (last != null) {
            assertThat(t.get().isNewerThan(last)).as("%s after %s", t.get(), last).isTrue();
          }
          last = t.get();
        }
      }
    }

    private static boolean sameLeader(LeaderChange a, LeaderChange b) {
      if (a.leader().isEmpty() || b.leader().isEmpty()) {
        return a.leader().isEmpty() && b.leader().isEmpty();
      }
      return a.leader().get().pid() == b.leader().get().pid()
          && a.leader().get().token().equals(b.leader().get().token());
    }
  }

  private LeaderLoop loop(TestDatabase db, LockKey key, String id, TakeoverMode mode) {
    return track(
        TestLoops.fast(LeaderLoop.builder(db.dataSource(), key))
            .candidateId(id)
            .takeover(mode)
            .build());
  }

  @Test
  void everyWatcherSeesGracefulChangesInTokenOrderWithinMilliseconds(TestDatabase db) {
    LockKey key = TestKeys.next();
    LeaderWatch w1 = track(LeaderWatch.open(db.dataSource()));
    LeaderWatch w2 = track(LeaderWatch.open(db.dataSource()));
    Heard h1 = new Heard();
    Heard h2 = new Heard();
    w1.watch(key, h1);
    w2.watch(key, h2);
    await().atMost(WITHIN).until(() -> h1.changes.size() == 1 && h2.changes.size() == 1);

    LeaderLoop a = loop(db, key, "watched-a", TakeoverMode.WAIT);
    a.start(ctx -> ctx.ensureLeader());
    await().atMost(WITHIN).until(a::isLeader);
    LeaderLoop b = loop(db, key, "watched-b", TakeoverMode.WAIT);
    b.start(ctx -> ctx.ensureLeader());
    await().atMost(WITHIN).until(() -> db.clientSessions("retsu-lock:watched-b") == 1);
    a.close();
    await().atMost(WITHIN).until(b::isLeader);
    b.close();

    List<String> expected =
        List.of("READ -", "ACQUIRED watched-a", "RELEASED -", "ACQUIRED watched-b", "RELEASED -");
    for (Heard h : List.of(h1, h2)) {
      await().atMost(WITHIN).until(() -> h.changes.size() >= expected.size());
      assertThat(h.summary()).containsExactlyElementsOf(expected);
      h.assertTokenOrder();
    }
    LeaderInfo seen = h1.changes.get(3).leader().orElseThrow();
    assertThat(seen.pid()).isGreaterThan(0);
    assertThat(seen.database()).isEqualTo(db.name());
    assertThat(seen.acquiredAt()).isPresent();
    assertThat(w1.leader(key)).isEmpty();
  }

  @Test
  void aTerminatedLeaderIsSeenEndedWithinTheCheckIntervalThenItsNextTerm(TestDatabase db)
      throws Exception {
    LockKey key = TestKeys.next();
    LeaderWatch w = track(LeaderWatch.open(db.dataSource()));
    Heard h = new Heard();
    LeaderLoop a =
        track(
            TestLoops.fast(LeaderLoop.builder(db.dataSource(), key))
                .candidateId("terminated")
                .retryInterval(Duration.ofSeconds(2))
                .maxBackoff(Duration.ofSeconds(2))
                .build());
    a.start(ctx -> ctx.ensureLeader());
    await().atMost(WITHIN).until(a::isLeader);
    w.watch(key, h);
    await().atMost(WITHIN).until(() -> h.changes.size() == 1);
    assertThat(h.summary()).containsExactly("READ terminated");
    assertThat(h.changes.get(0).leader().orElseThrow().token())
        .isEqualTo(a.currentTerm().map(Term::fencingToken));

    long before = System.nanoTime();
    assertThat(db.terminateBackend(a.currentTerm().orElseThrow().backendPid())).isTrue();
    await().atMost(WITHIN).until(() -> h.changes.size() >= 2);
    Duration seenAfter = Duration.ofNanos(System.nanoTime() - before);
    // Nothing was notified and nobody else leads before the loop retries 2 s later: the check.
    assertThat(h.summary()).containsExactly("READ terminated", "ENDED -");
    assertThat(seenAfter)
        .isLessThan(LeaderWatch.DEFAULT_CHECK_INTERVAL.plus(Duration.ofMillis(700)));
    await().atMost(WITHIN).until(() -> h.summary().contains("ACQUIRED terminated"));
    h.assertTokenOrder();
  }

  @Test
  void aKilledLeaderJvmIsSeenInOrderAndItsSuccessorWithinMilliseconds(TestDatabase db)
      throws Exception {
    LockKey key = TestKeys.next();
    LeaderWatch w = track(LeaderWatch.open(db.dataSource()));
    Heard h = new Heard();
    w.watch(key, h);
    HandOverCandidate.Jvm child =
        track(
            new HandOverCandidate.Jvm(
                "killed",
                List.of(
                    db.jdbcUrl(),
                    db.user(),
                    db.password(),
                    "killed",
                    Long.toString(key.value()),
                    "POLL")));
    await().atMost(WITHIN).until(() -> child.saw("EFFECT"));
    LeaderLoop b = loop(db, key, "successor", TakeoverMode.WAIT);
    b.start(ctx -> ctx.ensureLeader());
    await().atMost(WITHIN).until(() -> db.clientSessions("retsu-lock:successor") == 1);

    child.process.destroyForcibly(); // SIGKILL: no close, no notice; the OS closes the socket
    assertThat(child.process.waitFor(10, TimeUnit.SECONDS)).isTrue();
    await().atMost(WITHIN).until(b::isLeader);
    await().atMost(WITHIN).until(() -> h.summary().contains("ACQUIRED successor"));
    assertThat(h.summary()).startsWith("READ -", "ACQUIRED killed").endsWith("ACQUIRED successor");
    h.assertTokenOrder();
  }

  @Test
  void oneWatchSessionServesEveryKeyAndHoldsNoSnapshot(TestDatabase db) throws Exception {
    LeaderWatch w = track(LeaderWatch.builder(db.dataSource()).name("many").open());
    List<Heard> heard = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      Heard h = new Heard();
      heard.add(h);
      w.watch(TestKeys.next(), h);
    }
    await().atMost(WITHIN).until(() -> heard.stream().allMatch(h -> h.changes.size() == 1));
    // one: an earlier test's watch may still be leaving pg_stat_activity, so wait for it
    await().atMost(WITHIN).until(() -> db.clientSessions(LeaderWatch.APPLICATION_NAME_PREFIX) == 1);
    assertThat(
            db.queryInts(
                "SELECT count(*)::int FROM pg_stat_activity WHERE application_name ="
                    + " 'retsu-lock-watch:many' AND backend_xmin IS NULL AND backend_xid IS NULL"
                    + " AND state IN ('idle', 'active')"))
        .containsExactly(1);
    assertThat(w.isConnected()).isTrue();
  }

  @Test
  void leaderInfoFromTheLeaderFromSqlAndTheHolder(TestDatabase db) {
    LockKey key = TestKeys.next();
    assertThat(LeaderInfo.of(db.dataSource(), key)).isEmpty();
    LeaderLoop a = loop(db, key, "info-a", TakeoverMode.POLL);
    a.start(ctx -> ctx.ensureLeader());
    await().atMost(WITHIN).until(a::isLeader);
    Term t = a.currentTerm().orElseThrow();

    LeaderInfo own = a.leaderInfo().orElseThrow();
    assertThat(own.candidateId()).isEqualTo("info-a");
    assertThat(own.pid()).isEqualTo(t.backendPid());
    assertThat(own.token()).contains(t.fencingToken());
    assertThat(own.term()).hasValue(t.number());
    assertThat(own.acquiredAt()).contains(t.start());
    assertThat(own.validUntil().orElseThrow()).isAfter(own.lastRenewal().orElseThrow());

    LeaderInfo fromSql = LeaderInfo.of(db.dataSource(), key).orElseThrow();
    assertThat(fromSql.candidateId()).isEqualTo("info-a");
    assertThat(fromSql.pid()).isEqualTo(t.backendPid());
    assertThat(fromSql.token()).contains(t.fencingToken());
    assertThat(fromSql.database()).isEqualTo(db.name());
    assertThat(fromSql.lastRenewal()).as("the same role sees state_change").isPresent();
    assertThat(fromSql.term()).isEmpty();
    assertThat(fromSql.validUntil()).isEmpty();

    LeaderInfo holder = a.currentHolder().orElseThrow();
    assertThat(holder.candidateId()).isEqualTo("info-a");
    assertThat(holder.token()).contains(t.fencingToken());
    assertThat(holder.pid()).isEqualTo(t.backendPid());
  }

  @Test
  void leaderInfoOfManyKeysAnswersForTheHeldOnesInOneQuery(TestDatabase db) {
    LockKey held = TestKeys.next();
    LockKey free = TestKeys.next();
    LeaderLoop a = loop(db, held, "many-a", TakeoverMode.POLL);
    a.start(ctx -> ctx.ensureLeader());
    await().atMost(WITHIN).until(a::isLeader);
    Term t = a.currentTerm().orElseThrow();

    Map<LockKey, LeaderInfo> leaders = LeaderInfo.of(db.dataSource(), List.of(held, free));
    assertThat(leaders).containsOnlyKeys(held);
    assertThat(leaders.get(held).candidateId()).isEqualTo("many-a");
    assertThat(leaders.get(held).pid()).isEqualTo(t.backendPid());
    assertThat(leaders.get(held).token()).contains(t.fencingToken());
    assertThatThrownBy(() -> LeaderInfo.of(db.dataSource(), List.of()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("keys must name at least one key, but was empty");
  }

  @Test
  void aWatchThatNeedNotFailFastOpensWhileTheDatabaseIsDownAndReportsOnceItIsUp(TestDatabase db)
      throws Exception {
    DownUntilOpened down = new DownUntilOpened(db.dataSource());
    assertThatThrownBy(() -> LeaderWatch.open(down))
        .isInstanceOf(AdvisoryLockException.class)
        .hasMessageContaining("08001");
    LockKey key = TestKeys.next();
    LeaderWatch w =
        track(
            LeaderWatch.builder(down)
                .reconnectInterval(Duration.ofMillis(100))
                .failFast(false)
                .open());
    List<LeaderChange> heard = new CopyOnWriteArrayList<>();
    w.watch(key, heard::add);
    assertThat(w.isConnected()).isFalse();
    await().atMost(Duration.ofSeconds(5)).until(() -> down.refused() >= 3);
    assertThat(heard).isEmpty();
    LeaderLoop leader =
        track(TestLoops.fast(LeaderLoop.builder(db.dataSource(), key)).candidateId("up").build());
    leader.start(ctx -> {});
    await().atMost(Duration.ofSeconds(10)).until(leader::isLeader);
    down.open();
    await().atMost(Duration.ofSeconds(10)).until(w::isConnected);
    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> w.leader(key).map(LeaderInfo::candidateId).orElse("").equals("up"));
    assertThat(heard).isNotEmpty();
  }

  @Test
  void leaderInfoOfAMissingDatabaseFailsWithTheSqlState(TestDatabase db) {
    PGSimpleDataSource missing = db.dataSource();
    missing.setDatabaseName("no_such_database");
    LockKey key = TestKeys.next();
    for (ThrowingCallable read :
        List.<ThrowingCallable>of(
            () -> LeaderInfo.of(missing, key), () -> LeaderInfo.of(missing, List.of(key)))) {
      assertThatThrownBy(read)
          .isInstanceOf(AdvisoryLockException.class)
          .hasMessageContaining("(SQLState 3D000)")
          .satisfies(e -> assertThat(((AdvisoryLockException) e).sqlState()).contains("3D000"));
    }
  }

  @Test
  void aLoopAndAGroupBuiltWithTheWatchHearOnLeaderChanged(TestDatabase db) {
    LockKey key = TestKeys.next();
    LeaderWatch w = track(LeaderWatch.open(db.dataSource()));
    List<LeaderChange> loopHeard = new CopyOnWriteArrayList<>();
    LeaderLoop a =
        track(
            TestLoops.fast(LeaderLoop.builder(db.dataSource(), key))
                .candidateId("participant")
                .leaderWatch(w)
                .listener(
                    new LeaderListener() {
                      @Override
                      public void onLeaderChanged(LeaderChange change) {
                        loopHeard.add(change);
                      }
                    })
                .build());
    a.start(ctx -> ctx.ensureLeader());
    await()
        .atMost(WITHIN)
        .until(
            () ->
                loopHeard.stream()
                    .anyMatch(
                        c ->
                            c.leader()
                                .map(i -> i.candidateId().equals("participant"))
                                .orElse(false)));

    List<LockKey> keys = List.of(TestKeys.next(), TestKeys.next());
    List<LeaderChange> groupHeard = new CopyOnWriteArrayList<>();
    LeaderGroup g =
        track(
            LeaderGroup.builder(db.dataSource(), "watched-group", keys)
                .candidateId("member")
                .leaderWatch(w)
                .listener(
                    new LeaderListener() {
                      @Override
                      public void onLeaderChanged(LeaderChange change) {
                        groupHeard.add(change);
                      }
                    })
                .build());
    g.start(ctx -> ctx.ensureLeader());
    await()
        .atMost(WITHIN)
        .until(
            () ->
                keys.stream()
                    .allMatch(
                        k -> w.leader(k).map(i -> i.candidateId().equals("member")).orElse(false)));
    assertThat(groupHeard).extracting(LeaderChange::key).containsAll(keys);
  }

  @Test
  void aResetAllByTheTaskIsUndoneWithTheTermsTokenStillInTheName(TestDatabase db) {
    LockKey key = TestKeys.next();
    java.util.concurrent.atomic.AtomicBoolean reset =
        new java.util.concurrent.atomic.AtomicBoolean();
    LeaderLoop a =
        track(
            TestLoops.fast(LeaderLoop.builder(db.dataSource(), key))
                .candidateId("reset")
                .refreshInterval(Duration.ofMillis(100))
                .build());
    a.start(
        ctx -> {
          if (reset.compareAndSet(false, true)) {
            try (java.sql.Statement st = ctx.connection().createStatement()) {
              st.execute("RESET ALL"); // clears application_name; the next proof applies it again
            }
          }
          ctx.ensureLeader();
        });
    await().atMost(WITHIN).until(() -> reset.get() && a.isLeader());
    Term t = a.currentTerm().orElseThrow();
    await()
        .atMost(WITHIN)
        .until(
            () ->
                a.currentHolder()
                    .map(
                        h ->
                            h.candidateId().equals("reset")
                                && h.token().equals(Optional.of(t.fencingToken())))
                    .orElse(false));
  }

  @Test
  void aHolderReadBetweenTheGrantAndItsTokenStatementIsHeardOnceWithItsToken(TestDatabase db)
      throws Exception {
    long key = TestKeys.nextValue();
    LeaderWatch w = track(LeaderWatch.builder(db.dataSource()).name("grant").open());
    try (java.sql.Connection c = track(db.connect());
        java.sql.Statement st = c.createStatement()) {
      // A POLL grant's first statement: the key, under the candidate's name and no token yet.
      st.execute("SET application_name = 'retsu-lock:solo'");
      st.execute("SELECT pg_advisory_lock(" + key + ")");
      int pid =
          db.queryInts(
                  "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = "
                      + key
                      + " AND granted")
              .get(0);
      Heard h = new Heard();
      w.watch(LockKey.of(key), h);
      // The watch reads the key now; the holder it finds has no token: nothing goes out yet.
      await().during(Duration.ofMillis(300)).atMost(WITHIN).until(h.changes::isEmpty);
      // The grant's second statement: the token in the name and the acquired notice.
      st.execute(
          "SELECT set_config('application_name', 'retsu-lock:solo#A1A0D4242', false), pg_notify('"
              + "retsu_lock', 'acquired 1:"
              + key
              + " "
              + pid
              + " A1A0D4242 solo')");
      await().atMost(WITHIN).until(() -> h.changes.size() == 1);
      await().during(Duration.ofMillis(300)).atMost(WITHIN).until(() -> h.changes.size() == 1);
      assertThat(h.changes.get(0).leader().orElseThrow().token())
          .contains(new FencingToken(1, 0, 4242));
      assertThat(h.changes.get(0).cause()).isEqualTo(LeaderChange.Cause.ACQUIRED);
    }
  }
}
