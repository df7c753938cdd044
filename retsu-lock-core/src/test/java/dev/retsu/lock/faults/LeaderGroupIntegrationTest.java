package dev.retsu.lock.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.FailoverTiming;
import dev.retsu.lock.FencingToken;
import dev.retsu.lock.LeaderContext;
import dev.retsu.lock.LeaderGroup;
import dev.retsu.lock.LeaderGroupBuilder;
import dev.retsu.lock.LeaderTask;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import dev.retsu.lock.fakes.DownUntilOpened;
import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TermChecker;
import dev.retsu.lock.testing.TestDatabase;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@code LeaderGroup} on a real PostgreSQL: several members in one JVM, each with its own data
 * source (so its own sessions), share 60 keys. Every test ends by checking each key's timeline with
 * the fault suite's {@link TermChecker}: at no moment two acting owners of one key, tokens strictly
 * increasing per key.
 */
@ExtendWith(PostgresExtension.class)
class LeaderGroupIntegrationTest {

  private static final int N = 60;
  private static final Duration WITHIN = Duration.ofSeconds(30);
  private static final Duration MEMBERSHIP = Duration.ofMillis(250);

  private final List<LeaderGroup> groups = new ArrayList<>();
  private final GroupRecorder rec = new GroupRecorder();
  private String name;
  private List<LockKey> keys;

  @AfterEach
  void closeGroups() {
    groups.forEach(LeaderGroup::close);
  }

  private void setUp(TestInfo info) {
    name =
        "g" + Long.toHexString(TestKeys.nextValue()) + "-" + info.getTestMethod().get().getName();
    if (name.length() > 40) {
      name = name.substring(0, 40);
    }
    keys = new ArrayList<>();
    for (int i = 0; i < N; i++) {
      keys.add(TestKeys.next());
    }
  }

  private LeaderGroupBuilder member(TestDatabase db, String id) {
    return LeaderGroup.builder(db.dataSource(), name, keys)
        .candidateId(id)
        .membershipInterval(MEMBERSHIP)
        .refreshInterval(Duration.ofMillis(100))
        .timing(FailoverTiming.DEFAULT.withHeartbeatInterval(Duration.ofMillis(200)))
        .reconnectInterval(Duration.ofMillis(200))
        .listener(rec.listener(id));
  }

  private LeaderGroup start(LeaderGroupBuilder b, String id) {
    return start(b, rec.task(id));
  }

  private LeaderGroup start(LeaderGroupBuilder b, LeaderTask task) {
    LeaderGroup g = b.build();
    groups.add(g);
    g.start(task);
    return g;
  }

  /** Holder pid of each key right now, read from pg_locks. */
  private Map<LockKey, List<Integer>> holders(TestDatabase db) throws SQLException {
    Map<LockKey, List<Integer>> out = new HashMap<>();
    for (LockKey k : keys) {
      out.put(
          k,
          db.queryInts(
              "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1"
                  + " AND classid = ((?::int8 >> 32) & 4294967295)::oid"
                  + " AND objid = (?::int8 & 4294967295)::oid AND database = (SELECT oid FROM"
                  + " pg_database WHERE datname = current_database())",
              k.value(),
              k.value()));
    }
    return out;
  }

  private void assertSafe(Set<String> serverFaulted) {
    groups.forEach(LeaderGroup::close);
    assertThat(rec.violations(serverFaulted)).isEmpty();
    assertThat(rec.wrongSession).isEmpty();
  }

  @Test
  void aGroupBuiltNotToFailFastJoinsOnceTheDatabaseComesUp(TestDatabase db, TestInfo info) {
    setUp(info);
    DownUntilOpened late = new DownUntilOpened(db.dataSource());
    LeaderGroup g =
        LeaderGroup.builder(late, name, keys)
            .candidateId("late")
            .membershipInterval(MEMBERSHIP)
            .refreshInterval(Duration.ofMillis(100))
            .reconnectInterval(Duration.ofMillis(100))
            .failFast(false)
            .listener(rec.listener("late"))
            .build();
    groups.add(g);
    g.start(rec.task("late")); // returns although no session could be opened
    assertThat(g.state()).isEqualTo(LeaderGroup.State.RUNNING);
    await().atMost(WITHIN).until(() -> late.refused() >= 3);
    assertThat(g.heldCount()).isZero();
    late.open();
    await().atMost(WITHIN).until(() -> g.heldCount() == N);
    assertSafe(Set.of());
  }

  @Test
  void threeMembersShareSixtyKeysFairlyAndTakeOverWhenOneCloses(TestDatabase db, TestInfo info)
      throws Exception {
    setUp(info);
    LeaderGroup a = start(member(db, "a"), "a");
    LeaderGroup b = start(member(db, "b"), "b");
    LeaderGroup c = start(member(db, "c"), "c");
    await().atMost(WITHIN).until(() -> GroupRecorder.balanced(N, List.of(a, b, c)));
    assertThat(a.members()).isEqualTo(3);
    for (List<Integer> pids : holders(db).values()) {
      assertThat(pids).hasSize(1);
    }
    assertThat(a.openSessions()).isLessThanOrEqualTo(LeaderGroup.DEFAULT_SESSIONS);
    assertThat(db.clientSessions("retsu-lock:a")).isLessThanOrEqualTo(LeaderGroup.DEFAULT_SESSIONS);
    assertThat(db.clientSessions("retsu-lock-watch:a")).isEqualTo(1); // the push path's

    List<LockKey> ofC = c.heldKeys();
    c.close();
    assertThat(c.heldCount()).isZero();
    assertThat(
            rec.lost.stream().filter(l -> l.member().equals("c")).map(GroupRecorder.Lost::reason))
        .hasSize(ofC.size())
        .containsOnly(LossReason.CLOSED);
    await().atMost(WITHIN).until(() -> GroupRecorder.balanced(N, List.of(a, b)));
    assertThat(a.rebalances() + b.rebalances() + c.rebalances()).isPositive();
    assertSafe(Set.of());
  }

  /**
   * The push path: with a membership read only every 10 s, a member that closes is taken over at
   * once, because it tells the group when its keys are released, and one whose sessions all end
   * without a word (a crash, here every backend of the member terminated) is seen by the member
   * that watches its membership slot, which tells the others.
   */
  @Test
  void aMemberThatLeavesOrVanishesIsTakenOverAtOnceNotAtTheNextMembershipRead(
      TestDatabase db, TestInfo info) throws Exception {
    setUp(info);
    Duration slowRounds = Duration.ofSeconds(10);
    LeaderGroup a = start(member(db, "a").membershipInterval(slowRounds), "a");
    LeaderGroup b = start(member(db, "b").membershipInterval(slowRounds), "b");
    LeaderGroup c =
        start(
            member(db, "c").membershipInterval(slowRounds).reconnectInterval(Duration.ofMinutes(1)),
            "c");
    await().atMost(WITHIN).until(() -> GroupRecorder.balanced(N, List.of(a, b, c)));

    b.close(); // graceful: its keys are released, then the group is told
    await().atMost(Duration.ofSeconds(3)).until(() -> a.heldCount() + c.heldCount() == N);

    // Every session of c ends at once and none says why, as in a crash of its process.
    db.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            + " WHERE split_part(application_name, '#', 1) = 'retsu-lock:c'");
    await().atMost(Duration.ofSeconds(3)).until(() -> a.heldCount() == N);
    assertSafe(Set.of("c"));
  }

  @Test
  void aJoiningMemberIsBalancedWithinTheBound(TestDatabase db, TestInfo info) {
    setUp(info);
    LeaderGroup a = start(member(db, "a"), "a");
    await().atMost(WITHIN).until(() -> a.heldCount() == N);
    long joined = System.nanoTime();
    LeaderGroup b = start(member(db, "b"), "b");
    await().atMost(WITHIN).until(() -> GroupRecorder.balanced(N, List.of(a, b)));
    Duration took = Duration.ofNanos(System.nanoTime() - joined);
    // The documented bound: two membership intervals (+10 % jitter each) and the round trips.
    assertThat(took).isLessThan(MEMBERSHIP.multipliedBy(4).plusSeconds(2));
    assertThat(a.rebalances()).isEqualTo(30);
    assertThat(
            rec.lost.stream()
                .filter(l -> l.member().equals("a"))
                .map(GroupRecorder.Lost::reason)
                .distinct())
        .containsExactly(LossReason.CLOSED);
    assertSafe(Set.of());
  }

  @Test
  void terminatingOneSessionEndsExactlyItsKeysTermsAndTheyAreTakenAgain(
      TestDatabase db, TestInfo info) throws Exception {
    setUp(info);
    LeaderGroup a = start(member(db, "a"), "a");
    LeaderGroup b = start(member(db, "b"), "b");
    await().atMost(WITHIN).until(() -> GroupRecorder.balanced(N, List.of(a, b)));
    Map<Integer, List<LockKey>> byPid = new HashMap<>();
    Map<LockKey, Long> termOf = new HashMap<>();
    for (LockKey k : a.heldKeys()) {
      Term t = a.currentTerm(k).orElseThrow();
      byPid.computeIfAbsent(t.backendPid(), p -> new ArrayList<>()).add(k);
      termOf.put(k, t.number());
    }
    assertThat(byPid).hasSizeGreaterThan(1);
    int victim = byPid.keySet().iterator().next();
    List<LockKey> victimKeys = byPid.get(victim);
    int lostBefore = rec.lost.size();

    assertThat(db.terminateBackend(victim)).isTrue();

    await()
        .atMost(WITHIN)
        .until(
            () ->
                rec.lost.stream().skip(lostBefore).filter(l -> l.member().equals("a")).count()
                    >= victimKeys.size());
    // A copy first: a sub-list view of the recorder's list fails if a listener adds meanwhile.
    List<GroupRecorder.Lost> all = List.copyOf(rec.lost);
    List<GroupRecorder.Lost> after = all.subList(lostBefore, all.size());
    List<GroupRecorder.Lost> ofA = after.stream().filter(l -> l.member().equals("a")).toList();
    assertThat(ofA.stream().map(GroupRecorder.Lost::key))
        .containsExactlyInAnyOrderElementsOf(victimKeys);
    assertThat(ofA.stream().map(GroupRecorder.Lost::reason)).containsOnly(LossReason.SESSION_LOST);
    for (LockKey k : a.heldKeys()) {
      if (!victimKeys.contains(k)) {
        assertThat(a.currentTerm(k).orElseThrow().number()).isEqualTo(termOf.get(k));
      }
    }
    await().atMost(WITHIN).until(() -> GroupRecorder.balanced(N, List.of(a, b)));
    Set<String> faulted = new HashSet<>();
    for (LockKey k : victimKeys) {
      faulted.add(k + "|a#" + termOf.get(k));
    }
    assertSafe(faulted);
  }

  @Test
  void tokensStrictlyIncreasePerKeyAndOneBatchSharesOneToken(TestDatabase db, TestInfo info) {
    setUp(info);
    LeaderGroup first = start(member(db, "a").sessions(1), "a");
    await().atMost(WITHIN).until(() -> first.heldCount() == N);
    Map<LockKey, FencingToken> firstTokens = new HashMap<>();
    for (LockKey k : keys) {
      firstTokens.put(k, first.currentTerm(k).orElseThrow().fencingToken());
    }
    // One session, one batch: one durable token for all 60 keys.
    assertThat(new HashSet<>(firstTokens.values())).hasSize(1);
    first.close();

    LeaderGroup second = start(member(db, "b"), "b");
    await().atMost(WITHIN).until(() -> second.heldCount() == N);
    Set<FencingToken> distinct = new HashSet<>();
    for (LockKey k : keys) {
      FencingToken t = second.currentTerm(k).orElseThrow().fencingToken();
      distinct.add(t);
      assertThat(t.isNewerThan(firstTokens.get(k))).as("token of %s", k).isTrue();
    }
    // Four sessions: at most one token per session's batch.
    assertThat(distinct.size()).isBetween(1, LeaderGroup.DEFAULT_SESSIONS);
    assertSafe(Set.of());
  }

  @Test
  void workForAKeyRunsOnTheSessionThatHoldsIt(TestDatabase db, TestInfo info) throws Exception {
    setUp(info);
    LeaderGroup a = start(member(db, "a"), "a");
    LeaderGroup b = start(member(db, "b"), "b");
    await().atMost(WITHIN).until(() -> GroupRecorder.balanced(N, List.of(a, b)));
    await()
        .atMost(WITHIN)
        .until(
            () ->
                rec.workPids.getOrDefault("a", Map.of()).keySet().containsAll(a.heldKeys())
                    && rec.workPids.getOrDefault("b", Map.of()).keySet().containsAll(b.heldKeys()));
    Map<LockKey, List<Integer>> holders = holders(db);
    for (LeaderGroup g : List.of(a, b)) {
      for (LockKey k : g.heldKeys()) {
        assertThat(holders.get(k))
            .as("pg_locks holder of %s", k)
            .containsExactly(rec.workPids.get(g.candidateId()).get(k));
      }
    }
    assertThat(
            Thread.getAllStackTraces().keySet().stream()
                .map(Thread::getName)
                .filter(n -> n.startsWith("retsu-lock-group-" + name + "-s")))
        .hasSize(2 * LeaderGroup.DEFAULT_SESSIONS);
    assertSafe(Set.of());
  }

  @Test
  void userSqlThatUnlocksAKeyIsDetectedOnTheNextProof(TestDatabase db, TestInfo info) {
    setUp(info);
    LockKey victim = keys.get(7);
    AtomicBoolean unlocked = new AtomicBoolean();
    List<String> ensureAfterUnlock = new CopyOnWriteArrayList<>();
    Map<LockKey, Integer> runs = new ConcurrentHashMap<>();
    LeaderTask normal = rec.task("a");
    LeaderTask task =
        ctx -> {
          runs.merge(ctx.term().key(), 1, Integer::sum);
          if (ctx.term().key().equals(victim) && unlocked.compareAndSet(false, true)) {
            unlockThroughTheView(ctx, victim);
            try {
              ctx.ensureLeader();
              ensureAfterUnlock.add("passed");
            } catch (dev.retsu.lock.LeadershipLostException e) {
              ensureAfterUnlock.add(e.reason().name());
            }
            return;
          }
          normal.refresh(ctx);
        };
    LeaderGroup a = start(member(db, "a"), task);
    await().atMost(WITHIN).until(() -> a.heldCount() == N && unlocked.get());
    await()
        .atMost(WITHIN)
        .until(
            () ->
                rec.lost.stream()
                    .anyMatch(
                        l -> l.key().equals(victim) && l.reason() == LossReason.LOCK_NOT_HELD));
    assertThat(ensureAfterUnlock).containsExactly(LossReason.LOCK_NOT_HELD.name());
    assertThat(rec.lost.stream().filter(l -> !l.key().equals(victim))).isEmpty();
    // The key is free, so the member takes it again with a new term.
    await().atMost(WITHIN).until(() -> rec.terms(victim) >= 2 && a.heldCount() == N);
    assertSafe(Set.of());
  }

  private static void unlockThroughTheView(LeaderContext ctx, LockKey key) throws SQLException {
    try (Statement s = ctx.connection().createStatement()) {
      s.execute("SELECT pg_advisory_unlock(" + key.value() + "::int8)");
    }
  }
}
