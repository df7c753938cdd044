package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.fakes.TermEvents;
import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.fakes.TestLoops;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TermChecker;
import dev.retsu.lock.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Handing leadership over on purpose: {@code yield} with a cooldown, a preferred candidate in
 * another JVM taking over at the leader's next refresh (two and three JVMs), and the lock-delay
 * after an abnormal loss, on and off. The term checker judges every hand-over: no check after a
 * newer term started, no release while acting, tokens increasing.
 */
@ExtendWith(PostgresExtension.class)
class HandOverIntegrationTest {

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

  private LeaderLoop loop(TestDatabase db, LockKey key, TermEvents events, TakeoverMode mode) {
    return track(
        TestLoops.fast(LeaderLoop.builder(db.dataSource(), key))
            .candidateId(events.member)
            .refreshInterval(Duration.ofMillis(50))
            .takeover(mode)
            .listener(events)
            .build());
  }

  private HandOverCandidate.Jvm child(
      TestDatabase db, String id, LockKey key, String mode, String... more) {
    List<String> args =
        new ArrayList<>(
            List.of(db.jdbcUrl(), db.user(), db.password(), id, Long.toString(key.value()), mode));
    args.addAll(List.of(more));
    return track(new HandOverCandidate.Jvm(id, args));
  }

  /**
   * Ends every term before the checker reads them (it wants each term to end with its reason): the
   * loop here closes, each child JVM gets a SIGTERM (a graceful close) and is awaited until it has
   * exited and its last LOST line has been read from its output.
   */
  private static void endAll(LeaderLoop here, HandOverCandidate.Jvm... children)
      throws InterruptedException {
    here.close();
    for (HandOverCandidate.Jvm c : children) {
      c.sigterm();
    }
    for (HandOverCandidate.Jvm c : children) {
      assertThat(c.process.waitFor(20, TimeUnit.SECONDS)).as(c.name).isTrue();
      await().atMost(WITHIN).until(() -> count(c, "LOST") == count(c, "ACQUIRED"));
    }
  }

  private static long count(HandOverCandidate.Jvm c, String kind) {
    return c.events().stream().filter(e -> e.kind().equals(kind)).count();
  }

  private static void assertNoOverlap(List<TermChecker.Event> timeline) {
    TermChecker.Result r = TermChecker.check(timeline, Set.of());
    assertThat(r.violations()).isEmpty();
  }

  @Test
  void yieldHandsOverToTheWaitingStandbyAndDoesNotContendForTheCooldown(TestDatabase db) {
    LockKey key = TestKeys.next();
    TermEvents a = new TermEvents("yield-a");
    TermEvents b = new TermEvents("yield-b");
    LeaderLoop la = loop(db, key, a, TakeoverMode.WAIT);
    la.start(a.task());
    await().atMost(WITHIN).until(la::isLeader);
    LeaderLoop lb = loop(db, key, b, TakeoverMode.WAIT);
    lb.start(b.task());
    await().atMost(WITHIN).until(() -> db.clientSessions("retsu-lock:yield-b") == 1);

    Duration cooldown = Duration.ofSeconds(2);
    long yielded = System.nanoTime();
    assertThat(la.yield(cooldown)).isTrue();
    assertThat(la.isLeader()).isFalse();
    assertThat(a.lost).containsExactly(LossReason.YIELDED);
    await().atMost(WITHIN).until(lb::isLeader);
    lb.close(); // the key is free again: a stays out until its cooldown ends
    long acquiredAgain = awaitAcquired(a, 2);
    assertThat(TermEvents.between(yielded, acquiredAgain)).isGreaterThanOrEqualTo(cooldown);
    assertThat(la.state()).isEqualTo(LeaderLoop.State.RUNNING);
    la.close(); // every term ends with its reason before the checker reads them
    List<TermChecker.Event> all = new ArrayList<>(a.events);
    all.addAll(b.events);
    assertNoOverlap(all);
  }

  private static long awaitAcquired(TermEvents e, int terms) {
    await().atMost(WITHIN).until(() -> e.acquired.size() >= terms);
    return e.events.stream()
        .filter(x -> x.kind().equals("ACQUIRED"))
        .skip(terms - 1L)
        .findFirst()
        .orElseThrow()
        .nanos();
  }

  @Test
  void yieldIsRefusedWhenNotLeadingAndRejectsANegativeCooldown(TestDatabase db) {
    LeaderLoop l = loop(db, TestKeys.next(), new TermEvents("idle"), TakeoverMode.POLL);
    assertThat(l.yield(Duration.ZERO)).isFalse();
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> l.yield(Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("cooldown must be zero or positive, but was PT-1S");
  }

  @Test
  void aPreferredCandidateInAnotherJvmTakesOverAtTheLeadersNextRefresh(TestDatabase db)
      throws Exception {
    LockKey key = TestKeys.next();
    TermEvents a = new TermEvents("old");
    LeaderLoop la = loop(db, key, a, TakeoverMode.POLL);
    la.start(a.task());
    await().atMost(WITHIN).until(la::isLeader);

    HandOverCandidate.Jvm p = child(db, "new", key, "PREFERRED");
    await().atMost(WITHIN).until(() -> p.saw("ACQUIRED"));
    assertThat(a.lost).containsExactly(LossReason.YIELDED);
    // The old leader stays a candidate and never takes the key back from the preferred one.
    await().during(Duration.ofMillis(500)).atMost(WITHIN).until(() -> !la.isLeader());
    p.sigterm(); // a graceful close hands the key back
    await().atMost(WITHIN).until(la::isLeader);
    endAll(la, p);

    List<TermChecker.Event> all = new ArrayList<>(a.events);
    all.addAll(p.events());
    assertNoOverlap(all);
  }

  @Test
  void withThreeJvmsThePreferredCandidateWinsOverAStandbyThatQueuedFirst(TestDatabase db)
      throws Exception {
    LockKey key = TestKeys.next();
    TermEvents a = new TermEvents("leader");
    LeaderLoop la = loop(db, key, a, TakeoverMode.POLL);
    la.start(a.task());
    await().atMost(WITHIN).until(la::isLeader);
    HandOverCandidate.Jvm w = child(db, "waiting", key, "WAIT");
    await().atMost(WITHIN).until(() -> db.clientSessions("retsu-lock:waiting") == 1);

    HandOverCandidate.Jvm p = child(db, "preferred", key, "PREFERRED");
    await().atMost(WITHIN).until(() -> p.saw("ACQUIRED"));
    assertThat(w.saw("ACQUIRED")).as("the earlier WAIT standby").isFalse();
    assertThat(a.lost).containsExactly(LossReason.YIELDED);
    await().during(Duration.ofMillis(500)).atMost(WITHIN).until(() -> !w.saw("ACQUIRED"));
    endAll(la, p, w);

    List<TermChecker.Event> all = new ArrayList<>(a.events);
    all.addAll(w.events());
    all.addAll(p.events());
    assertNoOverlap(all);
  }

  @Test
  void aPreferredLeaderDoesNotYieldToAnotherPreferredCandidate(TestDatabase db) {
    LockKey key = TestKeys.next();
    TermEvents a = new TermEvents("pref-a");
    LeaderLoop la =
        track(
            TestLoops.fast(LeaderLoop.builder(db.dataSource(), key))
                .candidateId("pref-a")
                .refreshInterval(Duration.ofMillis(50))
                .preferred(true)
                .listener(a)
                .build());
    la.start(a.task());
    await().atMost(WITHIN).until(la::isLeader);
    HandOverCandidate.Jvm p = child(db, "pref-b", key, "PREFERRED");
    await().atMost(WITHIN).until(() -> db.clientSessions("retsu-lock-preferred:pref-b") == 1);
    await().during(Duration.ofMillis(500)).atMost(WITHIN).until(la::isLeader);
    assertThat(p.saw("ACQUIRED")).isFalse();
  }

  @Test
  void lockDelayWaitsAfterATerminatedLeaderButNotAfterAGracefulRelease(TestDatabase db)
      throws Exception {
    LockKey key = TestKeys.next();
    Duration delay = Duration.ofMillis(1500);
    TermEvents a = new TermEvents("delay-a");
    LeaderLoop la = loop(db, key, a, TakeoverMode.WAIT);
    la.start(a.task());
    await().atMost(WITHIN).until(la::isLeader);
    TermEvents b = new TermEvents("delay-b");
    LeaderLoop lb =
        track(
            TestLoops.fast(LeaderLoop.builder(db.dataSource(), key))
                .candidateId("delay-b")
                .refreshInterval(Duration.ofMillis(50))
                .takeover(TakeoverMode.WAIT)
                .takeoverDelay(delay)
                .listener(b)
                .build());
    lb.start(b.task());
    await().atMost(WITHIN).until(() -> db.clientSessions("retsu-lock:delay-b") == 1);

    // Graceful: a's released notice reaches b's waiting session before the grant: no wait.
    la.close();
    await().atMost(WITHIN).until(lb::isLeader);
    Term first = b.acquired.get(0);
    assertThat(Duration.between(first.start(), b.acquiredAt.get(0)))
        .isLessThan(Duration.ofMillis(500));

    // Abnormal: a third candidate waits with the delay; b's session is terminated.
    TermEvents c = new TermEvents("delay-c");
    LeaderLoop lc =
        track(
            TestLoops.fast(LeaderLoop.builder(db.dataSource(), key))
                .candidateId("delay-c")
                .refreshInterval(Duration.ofMillis(50))
                .takeover(TakeoverMode.WAIT)
                .takeoverDelay(delay)
                .listener(c)
                .build());
    lc.start(c.task());
    await().atMost(WITHIN).until(() -> db.clientSessions("retsu-lock:delay-c") == 1);
    long terminated = System.nanoTime();
    assertThat(db.terminateBackend(first.backendPid())).isTrue();
    await().atMost(WITHIN).until(() -> c.acquired.size() == 1);
    Term second = c.acquired.get(0);
    assertThat(Duration.between(second.start(), c.acquiredAt.get(0))).isGreaterThanOrEqualTo(delay);
    assertThat(TermEvents.between(terminated, c.first("CHECK", terminated)))
        .isGreaterThanOrEqualTo(delay);
    assertThat(lc.leaderInfo()).isPresent();
  }

  @Test
  void withoutTheLockDelayATerminatedLeadersWaitingSuccessorActsAtOnce(TestDatabase db)
      throws Exception {
    LockKey key = TestKeys.next();
    TermEvents a = new TermEvents("nodelay-a");
    LeaderLoop la = loop(db, key, a, TakeoverMode.WAIT);
    la.start(a.task());
    await().atMost(WITHIN).until(la::isLeader);
    TermEvents b = new TermEvents("nodelay-b");
    LeaderLoop lb = loop(db, key, b, TakeoverMode.WAIT);
    lb.start(b.task());
    await().atMost(WITHIN).until(() -> db.clientSessions("retsu-lock:nodelay-b") == 1);
    assertThat(db.terminateBackend(la.currentTerm().orElseThrow().backendPid())).isTrue();
    await().atMost(WITHIN).until(lb::isLeader);
    assertThat(Duration.between(b.acquired.get(0).start(), b.acquiredAt.get(0)))
        .isLessThan(Duration.ofMillis(500));
  }

  @Test
  void aPollStandbyWithTheLockDelayAlwaysWaitsForItCannotTell(TestDatabase db) {
    LockKey key = TestKeys.next();
    Duration delay = Duration.ofMillis(800);
    TermEvents a = new TermEvents("poll-delay");
    LeaderLoop la =
        track(
            TestLoops.fast(LeaderLoop.builder(db.dataSource(), key))
                .candidateId("poll-delay")
                .takeoverDelay(delay)
                .listener(a)
                .build());
    la.start(a.task());
    await().atMost(WITHIN).until(() -> a.acquired.size() == 1);
    assertThat(Duration.between(a.acquired.get(0).start(), a.acquiredAt.get(0)))
        .isGreaterThanOrEqualTo(delay);
  }

  @Test
  void groupYieldHandsOneKeyToAnotherMemberAndCoolsDown(TestDatabase db) {
    List<LockKey> keys = List.of(TestKeys.next(), TestKeys.next());
    LeaderGroup g1 =
        track(
            LeaderGroup.builder(db.dataSource(), "yield-group", keys)
                .candidateId("g1")
                .sessions(1)
                .membershipInterval(Duration.ofMillis(100))
                .build());
    g1.start(ctx -> ctx.ensureLeader());
    await().atMost(WITHIN).until(() -> g1.heldCount() == 2);
    LeaderGroup g2 =
        track(
            LeaderGroup.builder(db.dataSource(), "yield-group", keys)
                .candidateId("g2")
                .sessions(1)
                .membershipInterval(Duration.ofMillis(100))
                .build());
    g2.start(ctx -> ctx.ensureLeader());
    await().atMost(WITHIN).until(() -> g1.heldCount() == 1 && g2.heldCount() == 1);
    assertThat(g1.fairShare()).isEqualTo(1);

    LockKey k = g1.heldKeys().get(0);
    assertThat(g1.leaderInfo(k).orElseThrow().token()).isPresent();
    assertThat(g1.yield(k, Duration.ofSeconds(30))).isTrue();
    assertThat(g1.heldKeys()).doesNotContain(k);
    // g2 holds its share already: it takes the yielded key above its quota for the cooldown.
    await().atMost(WITHIN).until(() -> g2.heldKeys().contains(k));
    assertThat(g2.heldCount()).isEqualTo(2);
    await().during(Duration.ofMillis(500)).atMost(WITHIN).until(() -> g2.heldCount() == 2);
    g2.close(); // both keys free: g1 takes the other one, not the one it cools down from
    await().atMost(WITHIN).until(() -> g1.heldCount() == 1);
    await().during(Duration.ofMillis(500)).atMost(WITHIN).until(() -> !g1.heldKeys().contains(k));
  }

  @Test
  void aLeaderWhoseWaitListenedDropsTheLibrarysOwnNoticesWithoutAWarning(TestDatabase db) {
    LockKey key = TestKeys.next();
    TermEvents a = new TermEvents("quiet-a");
    LeaderLoop la = loop(db, key, a, TakeoverMode.WAIT);
    la.start(a.task());
    await().atMost(WITHIN).until(la::isLeader);
    HandOverCandidate.Jvm c = child(db, "listened", key, "WAIT", "300");
    await().atMost(WITHIN).until(() -> db.clientSessions("retsu-lock:listened") == 1);
    la.close();
    await().atMost(WITHIN).until(() -> c.saw("CHECK"));
    // Other keys' terms start and end: their notices reach the leader's session, which listened.
    for (int i = 0; i < 3; i++) {
      TermEvents other = new TermEvents("noisy-" + i);
      LeaderLoop o = loop(db, TestKeys.next(), other, TakeoverMode.POLL);
      o.start(other.task());
      await().atMost(WITHIN).until(o::isLeader);
      o.close();
    }
    await()
        .during(Duration.ofMillis(300))
        .atMost(WITHIN)
        .until(() -> c.lines().stream().noneMatch(l -> l.contains("Dropped a notification")));
    assertThat(c.lines()).noneMatch(l -> l.contains("Dropped a notification"));
  }

  /** A loop whose onLost of a yield blocks until {@code release} counts down. */
  private LeaderLoop blockingOnYield(
      TestDatabase db,
      LockKey key,
      String id,
      Duration closeTimeout,
      java.util.concurrent.CountDownLatch release) {
    return track(
        TestLoops.fast(LeaderLoop.builder(db.dataSource(), key))
            .candidateId(id)
            .takeover(TakeoverMode.WAIT)
            .closeTimeout(closeTimeout)
            .listener(
                new LeaderListener() {
                  @Override
                  public void onLost(Term term, LossReason reason, Throwable cause) {
                    if (reason == LossReason.YIELDED) {
                      try {
                        release.await();
                      } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                      }
                    }
                  }
                })
            .build());
  }

  @Test
  void aYieldKeepsTheLockWhileOnLostRunsPastTheSelfFenceAndIdleBounds(TestDatabase db)
      throws Exception {
    LockKey key = TestKeys.next();
    java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
    LeaderLoop la = blockingOnYield(db, key, "slow-lost-a", Duration.ofSeconds(8), release);
    la.start(ctx -> {});
    await().atMost(WITHIN).until(la::isLeader);
    int pid = la.currentTerm().orElseThrow().backendPid();
    TermEvents b = new TermEvents("slow-lost-b");
    LeaderLoop lb = loop(db, key, b, TakeoverMode.WAIT);
    lb.start(b.task());
    await().atMost(WITHIN).until(() -> db.clientSessions("retsu-lock:slow-lost-b") == 1);
    Thread yielding = new Thread(() -> la.yield(Duration.ZERO), "test-yield");
    yielding.start();
    // Past self-fencing (2 s) and the session's idle bound (4 s): the old session still holds it.
    await()
        .during(TestLoops.IDLE_SESSION.plusSeconds(1))
        .atMost(WITHIN)
        .until(() -> db.advisoryKeyHolders(key.value()).equals(List.of(pid)) && !lb.isLeader());
    release.countDown();
    await().atMost(WITHIN).until(lb::isLeader);
    yielding.join(10_000);
  }

  @Test
  void aYieldWhoseOnLostHangsReleasesTheLockAfterCloseTimeout(TestDatabase db) throws Exception {
    LockKey key = TestKeys.next();
    java.util.concurrent.CountDownLatch never = new java.util.concurrent.CountDownLatch(1);
    LeaderLoop la = blockingOnYield(db, key, "hung-lost-a", Duration.ofSeconds(3), never);
    la.start(ctx -> {});
    await().atMost(WITHIN).until(la::isLeader);
    TermEvents b = new TermEvents("hung-lost-b");
    LeaderLoop lb = loop(db, key, b, TakeoverMode.WAIT);
    lb.start(b.task());
    await().atMost(WITHIN).until(() -> db.clientSessions("retsu-lock:hung-lost-b") == 1);
    long yielded = System.nanoTime();
    Thread yielding = new Thread(() -> la.yield(Duration.ZERO), "test-yield");
    yielding.start();
    await().atMost(WITHIN).until(lb::isLeader);
    assertThat(Duration.ofNanos(System.nanoTime() - yielded))
        .isGreaterThanOrEqualTo(Duration.ofSeconds(3))
        .isLessThan(Duration.ofSeconds(15));
    never.countDown();
    yielding.join(10_000);
  }
}
