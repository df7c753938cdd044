package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.fakes.SharedBackendDataSource;
import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.internal.session.SessionSql;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** A group's sessions: their settings, their O(1) proof, and refusing a shared backend. */
@ExtendWith(PostgresExtension.class)
class LeaderGroupSessionIntegrationTest {

  private static final Duration WITHIN = Duration.ofSeconds(20);
  private final List<LeaderGroup> groups = new ArrayList<>();

  @AfterEach
  void closeGroups() {
    groups.forEach(LeaderGroup::close);
  }

  private static List<LockKey> keys(int n) {
    List<LockKey> keys = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      keys.add(TestKeys.next());
    }
    return keys;
  }

  private LeaderGroup track(LeaderGroup g) {
    groups.add(g);
    return g;
  }

  @Test
  void everySessionCarriesTheServerBoundsAndItsOwnMarker(TestDatabase db) {
    Map<LockKey, List<String>> seen = new ConcurrentHashMap<>();
    LeaderGroup g =
        track(
            LeaderGroup.builder(db.dataSource(), "settings-" + TestKeys.nextValue(), keys(8))
                .candidateId("bounds")
                .sessions(2)
                .membershipInterval(Duration.ofMillis(200))
                .build());
    g.start(
        ctx ->
            seen.computeIfAbsent(
                ctx.term().key(),
                k -> {
                  try (Statement s = ctx.connection().createStatement();
                      ResultSet rs =
                          s.executeQuery(
                              "SELECT current_setting('tcp_keepalives_idle'),"
                                  + " current_setting('idle_session_timeout'),"
                                  + " current_setting('tcp_user_timeout'),"
                                  + " current_setting('application_name'),"
                                  + " current_setting('retsu.lock_session', true)")) {
                    rs.next();
                    return List.of(
                        rs.getString(1),
                        rs.getString(2),
                        rs.getString(3),
                        rs.getString(4),
                        rs.getString(5));
                  } catch (java.sql.SQLException e) {
                    throw new IllegalStateException(e);
                  }
                }));
    await().atMost(WITHIN).until(() -> seen.size() == 8);
    for (List<String> s : seen.values()) {
      assertThat(s.subList(0, 3)).containsExactly("5", "11s", "11000");
      // A group session shows the newest token it took (one per batch of keys).
      assertThat(s.get(3)).matches("retsu-lock:bounds#[A-T][0-9]+[A-T][0-9]+[A-T][0-9]+");
      assertThat(s.get(4)).hasSize(32);
    }
    // Two sessions, two markers: each session's own.
    assertThat(seen.values().stream().map(s -> s.get(4)).distinct()).hasSize(2);
    assertThat(g.openSessions()).isEqualTo(2);
  }

  @Test
  void anUntouchedSessionProvesOwnershipWithoutReadingPgLocks(TestDatabase db) {
    LeaderGroup g =
        track(
            LeaderGroup.builder(db.dataSource(), "proof-" + TestKeys.nextValue(), keys(4))
                .candidateId("proof")
                .sessions(1)
                .refreshInterval(Duration.ofHours(1)) // one refresh at acquisition, then none
                .timing(FailoverTiming.DEFAULT.withHeartbeatInterval(Duration.ofMillis(100)))
                .membershipInterval(Duration.ofHours(1))
                .build());
    g.start(
        ctx -> {
          try (Statement s = ctx.connection().createStatement()) {
            s.execute("SELECT 1"); // touches the session: the next proof reads pg_locks once
          }
        });
    await().atMost(WITHIN).until(() -> g.heldCount() == 4);
    int pid = g.sessionPid(g.keys().get(0)).orElseThrow();
    // The session is idle between heartbeats; pg_stat_activity shows its last statement.
    await().atMost(WITHIN).until(() -> lastQuery(db, pid).equals(SessionSql.quickProof()));
    // Several heartbeats later it still has not read pg_locks.
    await()
        .during(Duration.ofMillis(800))
        .atMost(Duration.ofSeconds(5))
        .until(() -> !lastQuery(db, pid).contains("pg_locks"));
    assertThat(g.heldCount()).isEqualTo(4);
  }

  /**
   * When every session of a member ended (as in a server restart) and all are open again, the
   * member contends for its keys at once, not at its next membership round: with a one-hour
   * membership interval, the keys come back within seconds only through that immediate round.
   */
  @Test
  void aMemberWhoseSessionsAllReopenTakesItsKeysBackAtOnceNotAtItsNextRound(TestDatabase db)
      throws Exception {
    LeaderGroup g =
        track(
            LeaderGroup.builder(db.dataSource(), "reopen-" + TestKeys.nextValue(), keys(6))
                .candidateId("reopen")
                .sessions(2)
                .timing(FailoverTiming.DEFAULT.withHeartbeatInterval(Duration.ofMillis(100)))
                .reconnectInterval(Duration.ofMillis(100))
                .membershipInterval(Duration.ofHours(1))
                .build());
    g.start(ctx -> ctx.ensureLeader());
    await().atMost(WITHIN).until(() -> g.heldCount() == 6 && g.openSessions() == 2);
    List<Integer> before =
        db.queryInts(
            "SELECT pid FROM pg_stat_activity WHERE split_part(application_name, '#', 1) = 'retsu-lock:reopen'");
    assertThat(before).hasSize(2);
    for (int pid : before) {
      db.terminateBackend(pid);
    }

    await()
        .atMost(WITHIN)
        .until(
            () ->
                g.heldCount() == 6
                    && g.keys().stream()
                        .allMatch(
                            k -> g.sessionPid(k).filter(p -> !before.contains(p)).isPresent()));
  }

  /**
   * A session of a live member that ends (terminated here) frees its keys, and the member takes
   * them again on its other sessions at once: with a one-hour membership interval and a one-hour
   * reconnect interval, they come back within seconds only through the round its session's end
   * starts, not through a membership round or the ended session opening again.
   */
  @Test
  void aSessionLostByALiveMemberHasItsKeysTakenBackOnItsOtherSessionsAtOnce(TestDatabase db)
      throws Exception {
    LeaderGroup g =
        track(
            LeaderGroup.builder(db.dataSource(), "lost-" + TestKeys.nextValue(), keys(12))
                .candidateId("lost")
                .sessions(3)
                .timing(FailoverTiming.DEFAULT.withHeartbeatInterval(Duration.ofMillis(100)))
                .reconnectInterval(Duration.ofHours(1))
                .membershipInterval(Duration.ofHours(1))
                .build());
    g.start(ctx -> ctx.ensureLeader());
    await()
        .atMost(WITHIN)
        .until(
            () ->
                g.heldCount() == 12
                    && g.openSessions() == 3
                    && g.keys().stream().map(g::sessionPid).distinct().count() == 3);
    // A session that holds keys and no two-part lock: not the membership session (its slot is a
    // two-part key; the group's own keys here are one-part).
    List<Integer> membership =
        db.queryInts(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND granted");
    int victim =
        g.keys().stream()
            .map(k -> g.sessionPid(k).orElseThrow())
            .filter(pid -> !membership.contains(pid))
            .findFirst()
            .orElseThrow();
    List<LockKey> freed =
        g.keys().stream().filter(k -> g.sessionPid(k).orElseThrow() == victim).toList();
    assertThat(freed).isNotEmpty();

    assertThat(db.terminateBackend(victim)).isTrue();

    await()
        .atMost(WITHIN)
        .until(
            () ->
                g.openSessions() == 2
                    && g.heldCount() == 12
                    && freed.stream()
                        .allMatch(k -> g.sessionPid(k).filter(p -> p != victim).isPresent()));
  }

  /**
   * Membership is read by probing the 256 slots in shared mode, not from {@code pg_locks}: the
   * count is right (the reader's own slot included, a closed member gone), and the statement a
   * member's first session runs for it names no {@code pg_locks}.
   */
  @Test
  void membersAreCountedByProbingTheSlotsNotByReadingPgLocks(TestDatabase db) throws Exception {
    String name = "members-" + TestKeys.nextValue();
    List<LockKey> keys = keys(6);
    List<LeaderGroup> three = new ArrayList<>();
    for (String id : List.of("m1", "m2", "m3")) {
      LeaderGroup g =
          track(
              LeaderGroup.builder(db.dataSource(), name, keys)
                  .candidateId(id)
                  .sessions(1)
                  .membershipInterval(Duration.ofMillis(100))
                  .build());
      g.start(ctx -> {});
      three.add(g);
    }
    await()
        .atMost(WITHIN)
        .until(() -> three.stream().allMatch(g -> g.members() == 3 && g.heldCount() == 2));
    LeaderGroup first = three.get(0);
    int pid = first.sessionPid(first.heldKeys().get(0)).orElseThrow(); // its only session
    // The membership read is what this session runs most (every 100 ms); it probes the slots.
    await().atMost(WITHIN).until(() -> lastQuery(db, pid).contains("pg_try_advisory_lock_shared"));
    assertThat(lastQuery(db, pid)).contains("generate_series").doesNotContain("pg_locks");

    three.get(2).close();

    await().atMost(WITHIN).until(() -> three.get(0).members() == 2 && three.get(1).members() == 2);
  }

  /** The 257th member of a group fails to start, naming the limit. */
  @Test
  void aGroupWithEveryMembershipSlotHeldRefusesOneMoreMember(TestDatabase db) throws Exception {
    String name = "full-" + TestKeys.nextValue();
    LeaderGroup g =
        LeaderGroup.builder(db.dataSource(), name, keys(2)).candidateId("late").sessions(1).build();
    groups.add(g);
    try (Connection filler = db.connect();
        Statement s = filler.createStatement()) {
      // Someone holds every slot (as 256 members would).
      s.execute(
          "SELECT pg_advisory_lock("
              + g.membershipNamespace()
              + ", x) FROM generate_series(0, "
              + (LeaderGroup.MAX_MEMBERS - 1)
              + ") x");
      assertThatThrownBy(() -> g.start(ctx -> {}))
          .isInstanceOf(AdvisoryLockException.class)
          .hasMessageContaining("already has 256 members");
      assertThat(g.state()).isEqualTo(LeaderGroup.State.FAILED);
    }
  }

  private static String lastQuery(TestDatabase db, int pid) throws java.sql.SQLException {
    try (Connection c = db.connect();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT query FROM pg_stat_activity WHERE pid = " + pid)) {
      return rs.next() ? rs.getString(1) : "";
    }
  }

  @Test
  void startReturnsAFutureThatCompletesOnceTheGroupIsClosed(TestDatabase db) throws Exception {
    LeaderGroup g =
        track(
            LeaderGroup.builder(db.dataSource(), "done-" + TestKeys.nextValue(), keys(2)).build());
    CompletableFuture<Void> done = g.start(ctx -> {});
    await().atMost(WITHIN).until(() -> g.heldCount() == 2);
    assertThat(done).isNotDone();

    g.close();

    assertThat(done).isCompleted(); // normally: not exceptionally, not cancelled
    assertThat(g.state()).isEqualTo(LeaderGroup.State.CLOSED);
  }

  @Test
  void aGroupThatFailsAfterStartCompletesItsFutureWithTheCause(TestDatabase db) throws Exception {
    try (SharedBackendDataSource shared = new SharedBackendDataSource(db)) {
      // failFast(false): start returns whatever its sessions meet, so the refusal of the second
      // session (it gets the first one's backend) always comes after start.
      LeaderGroup g =
          track(
              LeaderGroup.builder(shared, "late-" + TestKeys.nextValue(), keys(4))
                  .candidateId("late")
                  .sessions(2)
                  .failFast(false)
                  .build());
      CompletableFuture<Void> done = g.start(ctx -> {});

      await().atMost(WITHIN).until(done::isDone);

      assertThat(done).isCompletedExceptionally();
      assertThatThrownBy(done::join)
          .hasCauseInstanceOf(UnsafeSessionException.class)
          .cause()
          .isSameAs(g.failure().orElseThrow());
    }
  }

  @Test
  void aBackendSharedWithAnotherGroupSessionIsRefused(TestDatabase db) throws Exception {
    try (SharedBackendDataSource shared = new SharedBackendDataSource(db)) {
      LeaderGroup g =
          track(
              LeaderGroup.builder(shared, "shared-" + TestKeys.nextValue(), keys(4))
                  .candidateId("shared")
                  .sessions(2)
                  .build());
      // The first session takes the backend and marks it; the second gets the same backend,
      // finds the marker and is refused, and the group stops: retrying would lock on it again.
      try {
        g.start(ctx -> {});
      } catch (UnsafeSessionException e) {
        assertThat(e.reason()).isEqualTo(LossReason.POOLER_DETECTED);
      }
      await().atMost(WITHIN).until(() -> g.state() == LeaderGroup.State.FAILED);
      assertThat(g.failure())
          .get()
          .isInstanceOfSatisfying(
              UnsafeSessionException.class,
              e -> {
                assertThat(e.reason()).isEqualTo(LossReason.POOLER_DETECTED);
                assertThat(e.getMessage()).contains("already carries another retsu-lock session");
              });
      assertThat(g.heldCount()).isZero();
    }
  }
}
