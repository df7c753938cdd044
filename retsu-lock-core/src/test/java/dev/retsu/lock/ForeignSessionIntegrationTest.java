package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.fakes.TestLoops;
import dev.retsu.lock.testing.LoginOnlyRole;
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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A hostile role that can only connect (PUBLIC's default {@code CONNECT}) names its session as a
 * candidate would and queues on the key. Its name counts for nothing without the candidates' role:
 * the SQL token check does not pass for it, who-holds reads show it as a foreign session, and a
 * leader never yields to it as to a preferred candidate.
 */
@ExtendWith(PostgresExtension.class)
class ForeignSessionIntegrationTest {

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

  /** Creates a role that can log in and nothing else, dropped after the test. */
  private LoginOnlyRole hostileRole(TestDatabase db) throws SQLException {
    LoginOnlyRole role = LoginOnlyRole.create(db, "mallory");
    open.add(0, role);
    return role;
  }

  /**
   * A session of {@code role} named {@code name}, queued in {@code pg_advisory_lock(key)} behind
   * the holder; it is terminated after the test, before its role is dropped. A grant completes
   * {@code granted} (exceptionally when the wait failed).
   */
  private Queued queue(TestDatabase db, LoginOnlyRole role, String name, LockKey key)
      throws Exception {
    Connection c = role.dataSource().getConnection();
    int pid;
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT pg_catalog.pg_backend_pid(), pg_catalog.set_config('application_name', ?,"
                + " false)")) {
      ps.setString(1, name);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        pid = rs.getInt(1);
      }
    }
    CompletableFuture<Void> granted =
        CompletableFuture.runAsync(
            () -> {
              try (Statement s = c.createStatement()) {
                s.execute("SELECT pg_catalog.pg_advisory_lock(" + key.value() + ")");
              } catch (SQLException e) {
                throw new IllegalStateException(e);
              }
            });
    Queued q = new Queued(pid, granted);
    track(
        () -> {
          db.terminateBackend(pid);
          granted.handle((v, e) -> null).get(10, TimeUnit.SECONDS);
          c.close();
        });
    // queued, or already granted (when a name is wrongly trusted, at once)
    await().atMost(WITHIN).until(() -> granted.isDone() || db.waitingForAdvisoryLocks(name) == 1);
    return q;
  }

  private record Queued(int pid, CompletableFuture<Void> granted) {}

  private LeaderLoop loop(TestDatabase db, LockKey key, String id, TakeoverMode mode) {
    return track(
        TestLoops.fast(LeaderLoop.builder(db.dataSource(), key))
            .candidateId(id)
            .refreshInterval(Duration.ofMillis(50))
            .takeover(mode)
            .build());
  }

  /** The table a fenced write changes, with its one row, on the candidates' role. */
  private static void fencedTable(Connection c) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute("CREATE TABLE IF NOT EXISTS fenced (id int PRIMARY KEY, v int)");
      s.execute("INSERT INTO fenced VALUES (1, 0) ON CONFLICT DO NOTHING");
    }
  }

  private static int fencedUpdate(Connection c, String check) throws SQLException {
    try (Statement s = c.createStatement()) {
      return s.executeUpdate("UPDATE fenced SET v = v + 1 WHERE id = 1 AND " + check);
    }
  }

  private static boolean query(Connection c, String predicate) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT " + predicate)) {
      rs.next();
      return rs.getBoolean(1);
    }
  }

  @Test
  void aForeignSessionGrantedTheKeyUnderADeadTermsNameIsNeitherCurrentNorAnyCandidatesTerm(
      TestDatabase db) throws Exception {
    LoginOnlyRole mallory = hostileRole(db);
    LockKey key = TestKeys.next();
    LeaderLoop a = loop(db, key, "victim-a", TakeoverMode.POLL);
    a.start(ctx -> ctx.ensureLeader());
    await().atMost(WITHIN).until(a::isLeader);
    Term term = a.currentTerm().orElseThrow();
    FencingToken token = term.fencingToken();

    Queued forged = queue(db, mallory, "retsu-lock:victim-a#" + token, key);
    db.terminateBackend(term.backendPid());
    forged.granted().get(WITHIN.toSeconds(), TimeUnit.SECONDS);
    assertThat(db.advisoryKeyHolders(key.value())).containsExactly(forged.pid());

    // A's write in flight, fenced, runs as the candidates' role: it changes nothing.
    try (Connection c = db.connect()) {
      fencedTable(c);
      assertThat(fencedUpdate(c, FencingSql.isCurrent(key, token))).isZero();
      assertThat(fencedUpdate(c, FencingSql.isCurrent(key, token, db.user()))).isZero();
      try (Statement s = c.createStatement()) {
        s.execute(FencingSql.functionScript());
      }
      assertThat(query(c, "retsu_lock_is_current(" + key.value() + ", '" + token + "')")).isFalse();
      assertThat(
              query(
                  c,
                  "retsu_lock_is_current_for_role("
                      + key.value()
                      + ", '"
                      + token
                      + "', '"
                      + db.user()
                      + "')"))
          .isFalse();
    }

    // Who holds it: a foreign session, never the dead term of victim-a.
    LeaderInfo info = LeaderInfo.of(db.dataSource(), key).orElseThrow();
    assertThat(info.pid()).isEqualTo(forged.pid());
    assertThat(info.foreign()).isTrue();
    assertThat(info.candidateId()).isEmpty();
    assertThat(info.token()).isEmpty();
    assertThat(LeaderInfo.of(db.dataSource(), List.of(key)).get(key).foreign()).isTrue();
    LeaderInfo holder = AdvisoryLock.of(db.dataSource(), key).currentHolder().orElseThrow();
    assertThat(holder.foreign()).isTrue();
    assertThat(holder.pid()).isEqualTo(forged.pid());
    assertThat(holder.candidateId()).isEmpty();
    assertThat(holder.token()).isEmpty();
    assertThat(a.currentHolder().orElseThrow().foreign()).isTrue();
    assertThat(a.isLeader()).isFalse();
  }

  @Test
  void aRealSuccessorsTokenIsCurrentForTheCandidatesRoleWhoeverAsks(TestDatabase db)
      throws Exception {
    LoginOnlyRole mallory = hostileRole(db);
    LockKey key = TestKeys.next();
    LeaderLoop a = loop(db, key, "real-a", TakeoverMode.POLL);
    a.start(ctx -> ctx.ensureLeader());
    await().atMost(WITHIN).until(a::isLeader);
    Term first = a.currentTerm().orElseThrow();
    LeaderLoop b = loop(db, key, "real-b", TakeoverMode.WAIT);
    b.start(ctx -> ctx.ensureLeader());
    await().atMost(WITHIN).until(() -> db.waitingForAdvisoryLocks("retsu-lock:real-b") == 1);
    db.terminateBackend(first.backendPid());
    await().atMost(WITHIN).until(b::isLeader);
    FencingToken second = b.currentTerm().orElseThrow().fencingToken();

    try (Connection c = db.connect()) {
      fencedTable(c);
      assertThat(fencedUpdate(c, FencingSql.isCurrent(key, first.fencingToken()))).isZero();
      assertThat(fencedUpdate(c, FencingSql.isCurrent(key, second))).isEqualTo(1);
      assertThat(fencedUpdate(c, FencingSql.isCurrent(key, second, db.user()))).isEqualTo(1);
      try (Statement s = c.createStatement()) {
        s.execute(FencingSql.functionScript());
        s.execute("GRANT ALL ON TABLE fenced TO " + mallory.name());
      }
      assertThat(query(c, "retsu_lock_is_current(" + key.value() + ", '" + second + "')")).isTrue();
    }
    // Asked under another role: the default role is the asker's, so it must name the candidates'.
    try (Connection m = mallory.dataSource().getConnection()) {
      assertThat(fencedUpdate(m, FencingSql.isCurrent(key, second))).isZero();
      assertThat(fencedUpdate(m, FencingSql.isCurrent(key, second, db.user()))).isEqualTo(1);
      assertThat(
              query(
                  m,
                  "retsu_lock_is_current_for_role("
                      + key.value()
                      + ", '"
                      + second
                      + "', '"
                      + db.user()
                      + "')"))
          .isTrue();
    }
    LeaderInfo info = LeaderInfo.of(db.dataSource(), key).orElseThrow();
    assertThat(info.foreign()).isFalse();
    assertThat(info.candidateId()).isEqualTo("real-b");
    assertThat(info.token()).contains(second);
    LeaderInfo named = LeaderInfo.of(mallory.dataSource(), key, db.user()).orElseThrow();
    assertThat(named.foreign()).isFalse();
    assertThat(named.token()).contains(second);
    assertThat(LeaderInfo.of(mallory.dataSource(), key).orElseThrow().foreign()).isTrue();
    assertThatThrownBy(() -> FencingSql.isCurrent(key, second, "bad\\role"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("but was \"bad\\role\"");
    assertThatThrownBy(() -> LeaderInfo.of(db.dataSource(), key, ""))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("but was \"\"");
  }

  @Test
  void aForeignSessionNamedPreferredNeverMakesALeaderYieldAtRefreshOrAtAWaitGrant(TestDatabase db)
      throws Exception {
    LoginOnlyRole mallory = hostileRole(db);
    LockKey key = TestKeys.next();
    LeaderLoop a = loop(db, key, "steady-a", TakeoverMode.POLL);
    a.start(ctx -> ctx.ensureLeader());
    await().atMost(WITHIN).until(a::isLeader);
    long termOfA = a.currentTerm().orElseThrow().number();
    LeaderLoop b = loop(db, key, "steady-b", TakeoverMode.WAIT);
    b.start(ctx -> ctx.ensureLeader());
    await().atMost(WITHIN).until(() -> db.waitingForAdvisoryLocks("retsu-lock:steady-b") == 1);

    // Queued behind B, named as a preferred candidate: A refreshes every 50 ms and keeps leading.
    Queued forged = queue(db, mallory, "retsu-lock-preferred:mallory", key);
    await()
        .during(Duration.ofSeconds(1))
        .atMost(WITHIN)
        .until(
            () ->
                a.isLeader()
                    && a.currentTerm().orElseThrow().number() == termOfA
                    && !forged.granted().isDone());

    // B is granted when A closes, ahead of the forged preferred session, and keeps the key.
    a.close();
    await().atMost(WITHIN).until(b::isLeader);
    long termOfB = b.currentTerm().orElseThrow().number();
    await()
        .during(Duration.ofSeconds(1))
        .atMost(WITHIN)
        .until(
            () ->
                b.isLeader()
                    && b.currentTerm().orElseThrow().number() == termOfB
                    && !forged.granted().isDone());
    assertThat(db.advisoryKeyHolders(key.value()))
        .containsExactly(b.currentTerm().orElseThrow().backendPid());
  }

  /**
   * A shared lock of another role blocks every candidate as surely as an exclusive one: it is shown
   * as a foreign holder, never as "nobody holds the key".
   */
  @Test
  void aForeignSharedLockIsShownAsAForeignHolder(TestDatabase db) throws Exception {
    LoginOnlyRole role = hostileRole(db);
    LockKey key = TestKeys.next();
    Connection m = track(role.dataSource().getConnection());
    try (Statement st = m.createStatement()) {
      st.execute("SELECT pg_catalog.set_config('application_name', 'retsu-lock:x#A1A0A1', false)");
      st.execute("SELECT pg_catalog.pg_advisory_lock_shared(" + key.value() + ")");
    }
    LeaderInfo info = LeaderInfo.of(db.dataSource(), key).orElseThrow();
    assertThat(info.foreign()).isTrue();
    assertThat(info.candidateId()).isEmpty();
    assertThat(info.token()).isEmpty();
    LeaderInfo holder = AdvisoryLock.of(db.dataSource(), key).currentHolder().orElseThrow();
    assertThat(holder.foreign()).isTrue();
    assertThat(holder.candidateId()).isEmpty();
  }

  /**
   * A read sees the lock table and the sessions' roles at two moments; a candidate's session that
   * ends between them (its key released, then its row gone) must not be shown as a foreign holder.
   * Sessions of the candidates' role take the key and close, over and over, while two readers ask
   * who holds it; no answer may call a holder foreign.
   */
  @Test
  void aCandidatesSessionEndingDuringAReadIsNeverShownAsForeign(TestDatabase db) throws Exception {
    LockKey key = TestKeys.next();
    AtomicBoolean stop = new AtomicBoolean();
    List<String> foreign = new CopyOnWriteArrayList<>();
    AtomicInteger reads = new AtomicInteger();
    List<Thread> readers = new ArrayList<>();
    for (int r = 0; r < 2; r++) {
      boolean info = r == 0;
      Thread t =
          new Thread(
              () -> {
                while (!stop.get()) {
                  if (info) {
                    LeaderInfo.of(db.dataSource(), key)
                        .filter(LeaderInfo::foreign)
                        .ifPresent(i -> foreign.add("LeaderInfo.of " + i));
                  } else {
                    AdvisoryLock.of(db.dataSource(), key)
                        .currentHolder()
                        .filter(LeaderInfo::foreign)
                        .ifPresent(h -> foreign.add("currentHolder " + h));
                  }
                  reads.incrementAndGet();
                }
              },
              "reader-" + r);
      t.start();
      readers.add(t);
    }
    int sessions = 0;
    try {
      for (; sessions < 600 && foreign.isEmpty(); sessions++) {
        try (Connection c = db.connect();
            Statement st = c.createStatement()) {
          st.execute(
              "SELECT pg_catalog.set_config('application_name', 'retsu-lock:c#A1A0A1', false)");
          st.execute("SELECT pg_catalog.pg_advisory_lock(" + key.value() + ")");
        }
      }
    } finally {
      stop.set(true);
      for (Thread t : readers) {
        t.join(10_000);
      }
    }
    assertThat(reads.get()).as("reads during %d sessions", sessions).isGreaterThan(sessions);
    assertThat(foreign).as("holders shown as foreign in %d reads", reads.get()).isEmpty();
  }
}
