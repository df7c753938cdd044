package dev.retsu.lock.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.FencingToken;
import dev.retsu.lock.LeaderGroup;
import dev.retsu.lock.LeaderGroupBuilder;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import dev.retsu.lock.TestKeys;
import dev.retsu.lock.testing.FaultProxy;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.PostgresServer.ShutdownMode;
import dev.retsu.lock.testing.TermChecker;
import dev.retsu.lock.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.ExtendWith;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The fault suite's group scenarios, in one JVM: a partition of one session, a server restart, a
 * storm of joins and leaves. Each key's timeline is checked with {@link TermChecker}: no key ever
 * has two acting owners. (A member killed with {@code kill -9} needs its own process: {@link
 * LeaderGroupKillIntegrationTest}.)
 */
@ExtendWith(PostgresExtension.class)
class LeaderGroupFaultIntegrationTest {

  private static final int N = 60;
  private static final Duration WITHIN = Duration.ofSeconds(40);

  private final List<LeaderGroup> groups = new ArrayList<>();
  private final List<AutoCloseable> closeables = new ArrayList<>();
  private final GroupRecorder rec = new GroupRecorder();
  private String name;
  private List<LockKey> keys;

  @AfterEach
  void closeAll() throws Exception {
    groups.forEach(LeaderGroup::close);
    for (AutoCloseable c : closeables) {
      c.close();
    }
  }

  private void setUp(TestInfo info) {
    name =
        "f" + Long.toHexString(TestKeys.nextValue()) + "-" + info.getTestMethod().get().getName();
    if (name.length() > 40) {
      name = name.substring(0, 40);
    }
    keys = new ArrayList<>();
    for (int i = 0; i < N; i++) {
      keys.add(TestKeys.next());
    }
  }

  /** Short bounds: self-fence after 3 s, the server frees a silent session after 4 s. */
  private LeaderGroupBuilder member(DataSource ds, String id) {
    return LeaderGroup.builder(ds, name, keys)
        .candidateId(id)
        .membershipInterval(Duration.ofMillis(250))
        .refreshInterval(Duration.ofMillis(100))
        .refreshTimeout(Duration.ofSeconds(2))
        .heartbeatInterval(Duration.ofMillis(500))
        .selfFenceAfter(Duration.ofSeconds(3))
        .serverKeepalives(Duration.ofSeconds(2), Duration.ofSeconds(1), 2)
        .roundTripTimeout(Duration.ofSeconds(2))
        .reconnectInterval(Duration.ofMillis(200))
        .listener(rec.listener(id));
  }

  private LeaderGroup start(LeaderGroupBuilder b, String id) {
    LeaderGroup g = b.build();
    groups.add(g);
    g.start(rec.task(id));
    return g;
  }

  private static boolean balanced(List<LeaderGroup> members) {
    int quota = (N + members.size() - 1) / members.size();
    Set<LockKey> all = new HashSet<>();
    int sum = 0;
    for (LeaderGroup g : members) {
      List<LockKey> held = g.heldKeys();
      if (held.size() > quota) {
        return false;
      }
      all.addAll(held);
      sum += held.size();
    }
    return all.size() == N && sum == N;
  }

  private void assertSafe(Set<String> serverFaulted) {
    groups.forEach(LeaderGroup::close);
    assertThat(rec.violations(serverFaulted)).isEmpty();
    assertThat(rec.wrongSession).isEmpty();
  }

  @Test
  void aPartitionedSessionFencesItsOwnKeysBeforeAnotherMemberTakesThem(
      TestDatabase db, TestInfo info) throws Exception {
    setUp(info);
    FaultProxy proxy = FaultProxy.inFrontOf(db.jdbcUrl());
    closeables.add(proxy);
    PGSimpleDataSource viaProxy = db.dataSource();
    viaProxy.setUrl(proxy.rewrite(db.jdbcUrl()));
    LeaderGroup a = start(member(viaProxy, "a"), "a");
    LeaderGroup b = start(member(db.dataSource(), "b"), "b");
    await().atMost(WITHIN).until(() -> balanced(List.of(a, b)));

    Map<Integer, List<LockKey>> byPid = new HashMap<>();
    Map<LockKey, Long> termOf = new HashMap<>();
    for (LockKey k : a.heldKeys()) {
      Term t = a.currentTerm(k).orElseThrow();
      byPid.computeIfAbsent(t.backendPid(), p -> new ArrayList<>()).add(k);
      termOf.put(k, t.number());
    }
    int victim = byPid.keySet().iterator().next();
    List<LockKey> victimKeys = byPid.get(victim);
    int port =
        db.queryInts("SELECT client_port FROM pg_stat_activity WHERE pid = ?", victim).get(0);
    int lostBefore = rec.lost.size();

    proxy.linkByUpstreamPort(port).blackhole();

    await()
        .atMost(WITHIN)
        .until(
            () ->
                victimKeys.stream()
                    .allMatch(
                        k ->
                            b.heldKeys().contains(k)
                                || a.heldKeys().contains(k)
                                    && a.currentTerm(k).orElseThrow().number() > termOf.get(k)));
    List<GroupRecorder.Lost> ofA =
        rec.lost.subList(lostBefore, rec.lost.size()).stream()
            .filter(l -> l.member().equals("a"))
            .toList();
    // Exactly the partitioned session's keys ended, before the server could free them: by the
    // heartbeat's network timeout (SESSION_LOST), the self-fencing deadline, or, for a key whose
    // refresh was blocked on the dead socket, its refreshTimeout; whichever came first.
    assertThat(ofA.stream().map(GroupRecorder.Lost::key))
        .containsExactlyInAnyOrderElementsOf(victimKeys);
    assertThat(ofA.stream().map(GroupRecorder.Lost::reason))
        .isSubsetOf(LossReason.SELF_FENCED, LossReason.SESSION_LOST, LossReason.REFRESH_TIMED_OUT);
    Set<String> faulted = new HashSet<>();
    for (LockKey k : victimKeys) {
      faulted.add(k + "|a#" + termOf.get(k));
    }
    await().atMost(WITHIN).until(() -> balanced(List.of(a, b)));
    assertSafe(faulted);
  }

  @Test
  void aServerRestartEndsEveryTermAndTheGroupOwnsEveryKeyAgainWithNewerTokens(
      TestDatabase db, TestInfo info) throws Exception {
    Assumptions.assumeTrue(db.server().supportsRestart(), "needs a server the tests can restart");
    setUp(info);
    LeaderGroup a = start(member(db.dataSource(), "a"), "a");
    LeaderGroup b = start(member(db.dataSource(), "b"), "b");
    await().atMost(WITHIN).until(() -> balanced(List.of(a, b)));
    Map<LockKey, FencingToken> before = new HashMap<>();
    Set<String> faulted = new HashSet<>();
    for (LeaderGroup g : List.of(a, b)) {
      for (LockKey k : g.heldKeys()) {
        Term t = g.currentTerm(k).orElseThrow();
        before.put(k, t.fencingToken());
        faulted.add(k + "|" + g.candidateId() + "#" + t.number());
      }
    }

    long restarted = System.nanoTime();
    db.server().restart(ShutdownMode.IMMEDIATE);

    await()
        .atMost(WITHIN)
        .until(
            () ->
                balanced(List.of(a, b))
                    && keys.stream()
                        .allMatch(
                            k ->
                                (a.currentTerm(k).isPresent() ? a : b)
                                    .currentTerm(k)
                                    .map(t -> t.fencingToken().isNewerThan(before.get(k)))
                                    .orElse(false)));
    Duration settle = Duration.ofNanos(System.nanoTime() - restarted);
    // Every term from before the restart ended with its session (later ones may have been
    // yielded while the members found each other again).
    assertThat(
            rec.lost.stream()
                .filter(l -> faulted.contains(l.key() + "|" + l.member() + "#" + l.number()))
                .map(GroupRecorder.Lost::reason))
        .hasSize(N)
        .containsOnly(LossReason.SESSION_LOST);
    assertThat(settle).isLessThan(WITHIN);
    assertSafe(faulted);
  }

  @Test
  void joinAndLeaveStormsNeverGiveAKeyTwoActingOwners(TestDatabase db, TestInfo info) {
    setUp(info);
    List<LeaderGroup> live = new ArrayList<>();
    int next = 0;
    for (; next < 3; next++) {
      live.add(start(member(db.dataSource(), "m" + next), "m" + next));
    }
    Random random = new Random(42);
    for (int round = 0; round < 8; round++) {
      LeaderGroup leaving = live.remove(random.nextInt(live.size()));
      leaving.close();
      String id = "m" + next++;
      live.add(start(member(db.dataSource(), id), id));
      if (round % 2 == 1) {
        // Let some rounds settle, others pile up on the previous one.
        await().atMost(WITHIN).until(() -> balanced(live));
      }
    }
    await().atMost(WITHIN).until(() -> balanced(live));
    assertThat(rec.lost.stream().map(GroupRecorder.Lost::reason).distinct())
        .containsOnly(LossReason.CLOSED);
    assertSafe(Set.of());
  }
}
