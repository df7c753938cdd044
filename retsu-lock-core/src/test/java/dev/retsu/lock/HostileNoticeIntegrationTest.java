package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.fakes.TermEvents;
import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.fakes.TestLoops;
import dev.retsu.lock.internal.session.Notices;
import dev.retsu.lock.testing.LoginOnlyRole;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A role that can only connect ({@code mallory}: LOGIN, the database's default {@code CONNECT} for
 * PUBLIC) sends notices on the library's channel and names its session like a candidate. A notice
 * is a hint, never a fact: the watch never names mallory nor says "nobody" while a candidate leads,
 * and a forged {@code released} never turns off the lock-delay.
 */
@ExtendWith(PostgresExtension.class)
class HostileNoticeIntegrationTest {

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

  /** A fresh role with LOGIN and nothing else, and a session of it. */
  private Connection mallory(TestDatabase db) throws SQLException {
    return track(malloryDataSource(db).getConnection());
  }

  private PGSimpleDataSource malloryDataSource(TestDatabase db) throws SQLException {
    return track(LoginOnlyRole.create(db, "mallory")).dataSource();
  }

  private static int pid(Connection c) throws SQLException {
    try (var st = c.createStatement();
        var rs = st.executeQuery("SELECT pg_catalog.pg_backend_pid()")) {
      rs.next();
      return rs.getInt(1);
    }
  }

  private static void run(Connection c, String sql, String... args) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      for (int i = 0; i < args.length; i++) {
        ps.setString(i + 1, args[i]);
      }
      ps.execute();
    }
  }

  private static void notify(Connection c, String payload) throws SQLException {
    run(c, "SELECT pg_catalog.pg_notify('" + Notices.CHANNEL + "', ?)", payload);
  }

  private LeaderLoop loop(TestDatabase db, LockKey key, String id, LeaderListener l) {
    return track(
        TestLoops.fast(LeaderLoop.builder(db.dataSource(), key))
            .candidateId(id)
            .takeover(TakeoverMode.WAIT)
            .listener(l)
            .build());
  }

  private static Optional<Integer> pidSeen(LeaderWatch w, LockKey key) {
    return w.leader(key).map(LeaderInfo::pid);
  }

  @Test
  void aForgedAcquiredNoticeNeverMakesTheWatchNameItsSender(TestDatabase db) throws Exception {
    LockKey key = TestKeys.next();
    TermEvents a = new TermEvents("notice-a");
    LeaderLoop la = loop(db, key, "notice-a", a);
    la.start(a.task());
    await().atMost(WITHIN).until(la::isLeader);
    int leaderPid = la.currentTerm().orElseThrow().backendPid();
    LeaderWatch w = track(LeaderWatch.open(db.dataSource()));
    List<LeaderChange> heard = new java.util.concurrent.CopyOnWriteArrayList<>();
    w.watch(key, heard::add);
    await().atMost(WITHIN).until(() -> pidSeen(w, key).equals(Optional.of(leaderPid)));

    Connection m = mallory(db);
    int malloryPid = pid(m);
    // Far above every real token, and short enough for a session's name.
    String top = new FencingToken(9_999, 9_999_999_999_999_999L, 9_999_999_999_999_999L).toString();
    run(
        m,
        "SELECT pg_catalog.set_config('application_name', ?, false)",
        "retsu-lock:mallory#" + top);
    notify(m, "acquired " + Notices.keyId(key) + " " + malloryPid + " " + top + " mallory");
    notify(m, "acquired " + Notices.keyId(key) + " " + leaderPid + " " + top + " mallory");
    await()
        .during(Duration.ofMillis(1500))
        .atMost(WITHIN)
        .until(() -> pidSeen(w, key).equals(Optional.of(leaderPid)));
    assertThat(heard).noneMatch(c -> c.leader().map(i -> i.pid() == malloryPid).orElse(false));

    // A real hand-over afterwards is still seen: the forged top token blinded nothing.
    TermEvents b = new TermEvents("notice-b");
    LeaderLoop lb = loop(db, key, "notice-b", b);
    lb.start(b.task());
    await().atMost(WITHIN).until(() -> db.clientSessions("retsu-lock:notice-b") == 1);
    la.close();
    await().atMost(WITHIN).until(lb::isLeader);
    int successor = lb.currentTerm().orElseThrow().backendPid();
    await().atMost(WITHIN).until(() -> pidSeen(w, key).equals(Optional.of(successor)));
    assertThat(w.leader(key).orElseThrow().candidateId()).isEqualTo("notice-b");
  }

  @Test
  void aForgedReleasedNoticeNeverMakesTheWatchSayNobody(TestDatabase db) throws Exception {
    LockKey key = TestKeys.next();
    TermEvents a = new TermEvents("released-a");
    LeaderLoop la = loop(db, key, "released-a", a);
    la.start(a.task());
    await().atMost(WITHIN).until(la::isLeader);
    Term term = la.currentTerm().orElseThrow();
    LeaderWatch w = track(LeaderWatch.open(db.dataSource()));
    w.watch(key, change -> {});
    await().atMost(WITHIN).until(() -> pidSeen(w, key).equals(Optional.of(term.backendPid())));

    Connection m = mallory(db);
    // Every field a leader's own released notice carries is readable by anyone.
    notify(m, Notices.released(key, term.backendPid(), term.fencingToken()));
    await()
        .during(Duration.ofMillis(1500))
        .atMost(WITHIN)
        .until(() -> pidSeen(w, key).equals(Optional.of(term.backendPid())));
  }

  @Test
  void aForgedReleasedNoticeNeverTurnsOffTheLockDelay(TestDatabase db) throws Exception {
    LockKey key = TestKeys.next();
    Duration delay = Duration.ofMillis(1500);
    TermEvents a = new TermEvents("forged-a");
    LeaderLoop la = loop(db, key, "forged-a", a);
    la.start(a.task());
    await().atMost(WITHIN).until(la::isLeader);
    Term first = la.currentTerm().orElseThrow();
    TermEvents b = new TermEvents("forged-b");
    LeaderLoop lb =
        track(
            TestLoops.fast(LeaderLoop.builder(db.dataSource(), key))
                .candidateId("forged-b")
                .takeover(TakeoverMode.WAIT)
                .takeoverDelay(delay)
                .listener(b)
                .build());
    lb.start(b.task());
    await().atMost(WITHIN).until(() -> db.clientSessions("retsu-lock:forged-b") == 1);

    Connection m = mallory(db);
    notify(m, Notices.released(key, first.backendPid(), first.fencingToken()));
    notify(m, Notices.released(key, pid(m), first.fencingToken()));
    long terminated = System.nanoTime();
    assertThat(db.terminateBackend(first.backendPid())).isTrue();
    await().atMost(WITHIN).until(() -> b.acquired.size() == 1);
    Term second = b.acquired.get(0);
    assertThat(Duration.between(second.start(), b.acquiredAt.get(0))).isGreaterThanOrEqualTo(delay);
    assertThat(TermEvents.between(terminated, b.first("CHECK", terminated)))
        .isGreaterThanOrEqualTo(delay);
  }

  @Test
  void aWatchShowsAKeyAnotherRoleHoldsAsForeignAndReadsForTheCandidatesRoleWhenTold(TestDatabase db)
      throws Exception {
    PGSimpleDataSource asMallory = malloryDataSource(db);
    LockKey held = TestKeys.next();
    Connection m = track(asMallory.getConnection());
    run(
        m,
        "SELECT pg_catalog.set_config('application_name', ?, false)",
        "retsu-lock:watch-a#A1A0A1");
    try (PreparedStatement ps = m.prepareStatement("SELECT pg_catalog.pg_advisory_lock(?)")) {
      ps.setLong(1, held.value());
      ps.execute();
    }
    LeaderWatch w = track(LeaderWatch.open(db.dataSource()));
    w.watch(held, change -> {});
    await().atMost(WITHIN).until(() -> w.leader(held).isPresent());
    LeaderInfo foreign = w.leader(held).orElseThrow();
    assertThat(foreign.foreign()).isTrue();
    assertThat(foreign.candidateId()).isEmpty();
    assertThat(foreign.token()).isEmpty();

    // A watch under another role (an operator's) names the candidates' role and sees their terms.
    LockKey key = TestKeys.next();
    TermEvents a = new TermEvents("watch-a");
    LeaderLoop la = loop(db, key, "watch-a", a);
    la.start(a.task());
    await().atMost(WITHIN).until(la::isLeader);
    LeaderWatch own = track(LeaderWatch.open(asMallory));
    own.watch(key, change -> {});
    await().atMost(WITHIN).until(() -> own.leader(key).isPresent());
    assertThat(own.leader(key).orElseThrow().foreign()).isTrue();
    LeaderWatch told = track(LeaderWatch.builder(asMallory).candidateRole(db.user()).open());
    told.watch(key, change -> {});
    await().atMost(WITHIN).until(() -> told.leader(key).isPresent());
    assertThat(told.leader(key).orElseThrow().candidateId()).isEqualTo("watch-a");
    assertThat(told.leader(key).orElseThrow().foreign()).isFalse();
  }
}
