package dev.retsu.lock.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.LeaderGroup;
import dev.retsu.lock.LeaderWatch;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.faults.FaultCandidate.Action;
import dev.retsu.lock.faults.FaultCandidate.Arm;
import dev.retsu.lock.faults.FaultCandidate.Phase;
import dev.retsu.lock.faults.GroupFaults.Where;
import dev.retsu.lock.faults.GroupRecorder.Stamp;
import dev.retsu.lock.faults.GroupRecorder.Strike;
import dev.retsu.lock.testing.FaultProxy;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.PostgresServer.ShutdownMode;
import dev.retsu.lock.testing.TermChecker;
import dev.retsu.lock.testing.TestDatabase;
import dev.retsu.lock.testing.WhoLeadsChecker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The fault suite's group scenarios in one JVM: a partition of one session, a server restart, a
 * storm of joins and leaves. Members run the suite's {@link TimedTask} per key (a wait, the check,
 * a wait, the effect; every other refresh inside a transaction), and each round strikes where a
 * seeded {@link Random} says ({@link Where}): while a key's task is before its check, between check
 * and effect, inside an open transaction, just after it, inside a member's {@code close()}, or
 * right after a member joined. Each key's timeline is then checked with {@link TermChecker}: no
 * check of a key's term after a newer term of that key began, tokens strictly increasing per key,
 * every term ended with a reason. (A member killed with {@code kill -9} needs its own process:
 * {@link LeaderGroupKillIntegrationTest}.)
 */
@ExtendWith(PostgresExtension.class)
class LeaderGroupFaultIntegrationTest {

  private static final int N = 24;
  private static final Duration WITHIN = Duration.ofSeconds(40);

  /** Losses a partitioned or restarted session's keys may end with, besides a graceful close. */
  private static final Set<LossReason> CUT_OFF =
      EnumSet.of(LossReason.SELF_FENCED, LossReason.SESSION_LOST, LossReason.REFRESH_TIMED_OUT);

  private final List<LeaderGroup> groups = new ArrayList<>();
  private final List<AutoCloseable> closeables = new ArrayList<>();
  private final List<CompletableFuture<Void>> closings = new ArrayList<>();
  private final GroupRecorder rec = new GroupRecorder();
  private String name;
  private List<LockKey> keys;
  private Random random;

  @AfterEach
  void closeAll() throws Exception {
    groups.forEach(LeaderGroup::close);
    for (AutoCloseable c : closeables) {
      c.close();
    }
  }

  private void setUp(String scenario, int round, String plan) {
    long seed = GroupFaults.seed(scenario, round);
    random = new Random(seed);
    name = "f" + Long.toHexString(TestKeys.nextValue()) + "-" + scenario;
    keys = new ArrayList<>();
    for (int i = 0; i < N; i++) {
      keys.add(TestKeys.next());
    }
    GroupFaults.announce(scenario, round, seed, plan);
  }

  private LeaderGroup start(DataSource ds, String id) {
    LeaderGroup g =
        FaultTiming.fast(LeaderGroup.builder(ds, name, keys))
            .candidateId(id)
            .listener(rec.listener(id))
            .build();
    groups.add(g);
    g.start(rec.timedTask(id, new Random(random.nextLong()), GroupFaults.TASK));
    return g;
  }

  /** Starts a member that joins {@code living}. */
  private LeaderGroup joined(List<LeaderGroup> living, DataSource ds, String id) {
    LeaderGroup g = start(ds, id);
    living.add(g);
    return g;
  }

  /** Closes a member on another thread, as a shutdown would; {@link #closed} awaits it. */
  private CompletableFuture<Void> closeAsync(LeaderGroup g) {
    rec.closing(g.candidateId());
    CompletableFuture<Void> done = new CompletableFuture<>();
    Thread t =
        new Thread(
            () -> {
              g.close();
              done.complete(null);
            },
            "retsu-lock-test-close-" + g.candidateId());
    t.setDaemon(true);
    t.start();
    closings.add(done);
    return done;
  }

  /** Every close() started returned within the bound, faults or not. */
  private void closed() throws Exception {
    for (CompletableFuture<Void> c : closings) {
      c.get(WITHIN.toMillis(), TimeUnit.MILLISECONDS);
    }
  }

  /** The members are balanced and every key has run its task on its owner. */
  private void settled(List<LeaderGroup> members) {
    await().atMost(WITHIN).until(() -> GroupRecorder.balanced(N, members));
    rec.awaitEffects(keys, 1, WITHIN);
  }

  /**
   * Brings a member to where the fault is to strike and returns that moment's stamp: the PHASE of
   * {@code target}'s task or of its {@code close()} (started here, on another thread), or, for
   * {@link Where#JOIN}, the first ACQUIRED of the member {@code join} starts.
   */
  private Stamp reach(Where where, LeaderGroup target, Supplier<LeaderGroup> join) {
    long since = System.nanoTime();
    if (where == Where.JOIN) {
      return rec.awaitStamp(join.get().candidateId(), "ACQUIRED", since, WITHIN);
    }
    rec.arm(target.candidateId(), where.arm());
    if (where == Where.CLOSE) {
      closeAsync(target);
    }
    return rec.awaitStamp(target.candidateId(), "PHASE", since, WITHIN);
  }

  /** The backend pid of one of {@code g}'s sessions that holds a key, drawn at random. */
  private int someSessionOf(LeaderGroup g) {
    return await()
        .atMost(WITHIN)
        .until(
            () -> {
              List<LockKey> held = g.heldKeys();
              return held.isEmpty()
                  ? Optional.<Integer>empty()
                  : g.sessionPid(GroupFaults.pick(random, held));
            },
            Optional::isPresent)
        .orElseThrow();
  }

  /**
   * How the terms of {@code member} on backend {@code pid} that were open at {@code at} ended; null
   * for one that has not ended yet.
   */
  private List<LossReason> lossesOfStruck(String member, int pid, long at) {
    List<LossReason> out = new ArrayList<>();
    for (var e : rec.byKey.entrySet()) {
      for (var acquired : e.getValue()) {
        if (acquired.kind().equals("ACQUIRED")
            && acquired.member().equals(member)
            && acquired.nanos() <= at
            && Integer.parseInt(acquired.fields().get(2)) == pid) {
          String term = acquired.fields().get(0);
          Optional<TermChecker.Event> lost = GroupRecorder.lostOf(e.getValue(), member, term);
          if (lost.isEmpty()) {
            out.add(null);
          } else if (lost.get().nanos() > at) {
            out.add(LossReason.valueOf(lost.get().fields().get(1)));
          }
        }
      }
    }
    return out;
  }

  /**
   * Waits for a fault's aftermath; when it does not come, the verdict on what happened meanwhile
   * (every member closed) fails first, with its violations, then the timeout.
   */
  private void awaitAftermath(String scenario, int round, String faults, Callable<Boolean> done)
      throws Exception {
    try {
      await().atMost(WITHIN).until(done);
    } catch (ConditionTimeoutException e) {
      GroupFaults.judge(scenario, round, faults + " (timed out)", closeAndAnalyse());
      throw e;
    }
  }

  private GroupRecorder.Result closeAndAnalyse() throws Exception {
    groups.forEach(LeaderGroup::close);
    closed();
    return rec.analyse(Set.of());
  }

  // ---------------------------------------------------------------------------------------------

  /**
   * One of member a's sessions (a connects through a {@link FaultProxy}) is partitioned where the
   * round says: its keys' terms end on the client's own bounds (self-fencing, the heartbeat's
   * network timeout, the refresh timeout) or with the close, before the server frees them after 4
   * s; they are owned again (by a's next session, by b, or by a joiner), and no check of a struck
   * term passes after a newer term of its key began.
   */
  @ParameterizedTest(name = "round {0}")
  @MethodSource("dev.retsu.lock.faults.GroupFaults#rounds")
  void aPartitionedSessionFencesItsOwnKeysBeforeAnotherMemberTakesThem(int round, TestDatabase db)
      throws Exception {
    String scenario = "group-partition";
    Where where = GroupFaults.where(scenario, round);
    setUp(scenario, round, "partition one session of a @" + where);
    FaultProxy proxy = FaultProxy.inFrontOf(db.jdbcUrl());
    closeables.add(proxy);
    System.out.println("GROUP-FAULTS group-partition kernel drops: " + proxy.kernelDrops());
    PGSimpleDataSource viaProxy = db.dataSource();
    viaProxy.setUrl(proxy.rewrite(db.jdbcUrl()));
    LeaderGroup a = start(viaProxy, "a");
    LeaderGroup b = start(db.dataSource(), "b");
    settled(List.of(a, b));
    List<LeaderGroup> living = new ArrayList<>(List.of(a, b));

    Stamp at = reach(where, a, () -> joined(living, db.dataSource(), "c"));
    int victim = where == Where.JOIN ? someSessionOf(a) : rec.pid(at.key(), "a", at.term());
    int port =
        db.queryInts("SELECT client_port FROM pg_stat_activity WHERE pid = ?", victim).get(0);
    proxy.linkByUpstreamPort(port).blackhole();
    long struck = System.nanoTime();
    rec.strike(new Strike(round, "partition@" + where, struck, true, "a", victim));
    if (where == Where.CLOSE) {
      living.remove(a);
    }

    // Every struck term of a ends (on the client's bounds, or closed), and the keys are taken.
    awaitAftermath(
        scenario,
        round,
        "partition@" + where,
        () ->
            !lossesOfStruck("a", victim, struck).contains(null)
                && GroupRecorder.balanced(N, living));
    if (where != Where.CLOSE) {
      assertThat(lossesOfStruck("a", victim, struck)).isNotEmpty(); // at least the phase's key
    }
    Set<LossReason> allowed = EnumSet.copyOf(CUT_OFF);
    if (where == Where.CLOSE || where == Where.JOIN) {
      allowed.add(LossReason.CLOSED); // closed, or yielded to the joiner, before it was cut off
    }
    assertThat(lossesOfStruck("a", victim, struck)).isSubsetOf(allowed);
    GroupFaults.judge(scenario, round, "partition@" + where, closeAndAnalyse());
  }

  /**
   * User SQL on member a's session releases one key where its text hides it (a function whose body
   * unlocks, a statement prepared and checked before it runs, an escaped name, drawn), in that
   * key's task before its check, after it or inside a transaction (drawn), and the task then keeps
   * issuing statements and checks for the whole phase. The key's term ends (LOCK_NOT_HELD) and the
   * key is owned again; the other keys on that session keep their terms; no check of the struck
   * term passes after a newer term began, but within one heartbeat for the function (the bound an
   * ownership proof gives what text cannot show).
   */
  @ParameterizedTest(name = "round {0}")
  @MethodSource("dev.retsu.lock.faults.GroupFaults#rounds")
  void userSqlReleasesAKeyWhileItsTaskKeepsWorking(int round, TestDatabase db) throws Exception {
    String scenario = "group-user-sql";
    Random draw = new Random(GroupFaults.seed(scenario, round));
    Action action =
        GroupFaults.pick(
            draw, List.of(Action.UNLOCK_FUNCTION, Action.UNLOCK_PREPARED, Action.UNLOCK_ESCAPED));
    Phase phase = GroupFaults.pick(draw, List.of(Phase.PRE, Phase.POST, Phase.TX));
    db.execute(TimedTask.FUNCTIONS);
    setUp(scenario, round, action + " @" + phase);
    LeaderGroup a = start(db.dataSource(), "a");
    LeaderGroup b = start(db.dataSource(), "b");
    settled(List.of(a, b));

    long since = System.nanoTime();
    rec.arm("a", new Arm(phase, action, GroupFaults.LINGER_MS));
    Stamp at = rec.awaitStamp("a", "PHASE", since, WITHIN);
    long allowance =
        action == Action.UNLOCK_FUNCTION
            ? FaultTiming.GROUP_HEARTBEAT.plusMillis(100).toNanos()
            : 0;
    String label = action + "@" + phase;
    rec.strike(new Strike(round, label, at.event().nanos(), true, "a", null, at.key(), allowance));

    awaitAftermath(
        scenario,
        round,
        label,
        () ->
            GroupRecorder.lostOf(rec.byKey.get(at.key()), "a", at.term()).isPresent()
                && GroupRecorder.balanced(N, List.of(a, b)));
    assertThat(GroupRecorder.lostOf(rec.byKey.get(at.key()), "a", at.term()).orElseThrow().fields())
        .contains("LOCK_NOT_HELD");
    GroupFaults.judge(scenario, round, label, closeAndAnalyse());
  }

  /**
   * The server restarts (fast or immediate, drawn) where the round says: every term ends with its
   * session, the members open new sessions and own every key again with newer tokens, and no check
   * of a term from before the restart passes after a newer term of its key began.
   */
  @ParameterizedTest(name = "round {0}")
  @MethodSource("dev.retsu.lock.faults.GroupFaults#rounds")
  void aServerRestartEndsEveryTermAndTheGroupOwnsEveryKeyAgainWithNewerTokens(
      int round, TestDatabase db) throws Exception {
    Assumptions.assumeTrue(db.server().supportsRestart(), "needs a server the tests can restart");
    String scenario = "group-restart";
    Random draw = new Random(GroupFaults.seed(scenario, round));
    Where where = GroupFaults.where(scenario, round);
    ShutdownMode mode = GroupFaults.pick(draw, List.of(ShutdownMode.values()));
    setUp(scenario, round, "restart " + mode + " @" + where);
    LeaderGroup a = start(db.dataSource(), "a");
    LeaderGroup b = start(db.dataSource(), "b");
    settled(List.of(a, b));
    List<LeaderGroup> living = new ArrayList<>(List.of(a, b));
    LeaderGroup target = GroupFaults.pick(draw, List.of(a, b));

    reach(where, target, () -> joined(living, db.dataSource(), "c"));
    if (where == Where.CLOSE) {
      living.remove(target);
    }
    long struck = System.nanoTime();
    rec.strike(new Strike(round, "restart-" + mode + "@" + where, struck, true, null, null));
    db.server().restart(mode);

    // Every key is owned again, by a term that began after the restart.
    awaitAftermath(
        scenario,
        round,
        "restart-" + mode + "@" + where,
        () ->
            GroupRecorder.balanced(N, living)
                && keys.stream()
                    .allMatch(
                        k ->
                            rec.byKey.get(k).stream()
                                .anyMatch(e -> e.kind().equals("ACQUIRED") && e.nanos() > struck)));
    GroupFaults.judge(scenario, round, "restart-" + mode + "@" + where, closeAndAnalyse());
  }

  /**
   * Members leave and join in a storm, each leave or join where the round draws: a member closes
   * while one of its keys' tasks is before its check, between check and effect or inside a
   * transaction; a member joins while another is inside its close(); a member leaves just as a
   * joiner takes its first keys. Some steps settle, others pile up on the previous one. Every loss
   * is graceful (CLOSED), and no key ever has two acting owners.
   */
  @ParameterizedTest(name = "round {0}")
  @MethodSource("dev.retsu.lock.faults.GroupFaults#rounds")
  void joinAndLeaveStormsNeverGiveAKeyTwoActingOwners(int round, TestDatabase db) throws Exception {
    String scenario = "group-storm";
    Random draw = new Random(GroupFaults.seed(scenario, round));
    List<Where> steps = GroupFaults.places(draw); // every place once, in a seeded order
    setUp(scenario, round, "leave/join at " + steps);
    List<LeaderGroup> live = new ArrayList<>();
    int next = 0;
    for (; next < 3; next++) {
      live.add(start(db.dataSource(), "m" + next));
    }
    settled(live);
    for (int step = 0; step < steps.size(); step++) {
      Where where = steps.get(step);
      LeaderGroup leaving = live.remove(draw.nextInt(live.size()));
      // A phase is reached only by a member that holds keys; one that just joined soon does.
      await().atMost(WITHIN).until(() -> leaving.heldCount() > 0);
      String id = "m" + next++;
      long at = System.nanoTime();
      switch (where) {
        case JOIN -> {
          live.add(start(db.dataSource(), id));
          rec.awaitStamp(id, "ACQUIRED", at, WITHIN);
          rec.closing(leaving.candidateId());
          leaving.close();
        }
        case CLOSE -> {
          reach(Where.CLOSE, leaving, null); // leaving is inside close() now
          live.add(start(db.dataSource(), id));
        }
        default -> {
          reach(where, leaving, null); // one of its keys' tasks is at the phase
          rec.closing(leaving.candidateId());
          leaving.close();
          live.add(start(db.dataSource(), id));
        }
      }
      rec.strike(new Strike(round, "storm-" + where, at, false, leaving.candidateId(), null));
      if (step % 2 == 1) {
        await().atMost(WITHIN).until(() -> GroupRecorder.balanced(N, live));
      }
    }
    await().atMost(WITHIN).until(() -> GroupRecorder.balanced(N, live));
    closed();
    assertThat(rec.lost.stream().map(GroupRecorder.Lost::reason).distinct())
        .containsOnly(LossReason.CLOSED);
    GroupFaults.judge(scenario, round, "storm " + steps, closeAndAnalyse());
  }

  // ---------------------------------------------------------------------------------------------
  // A hostile role

  /**
   * A role {@code mallory} with LOGIN and nothing else strikes a group with every forgery of {@link
   * HostileRoleFaultIntegrationTest.Forgery}, each on another key that member a holds (notices on
   * {@code retsu_lock} with a's pid and token and with its own pid and the top token; sessions
   * named like a's term, idle and queued on the key; one named preferred, queued), then a's term
   * ends where the round says: a key's session terminated at a phase of its task, a's close(), or a
   * join that makes a yield keys. No key has two acting owners, every key is owned again (after
   * mallory let go of any it was granted), and every "who leads" answer sampled meanwhile (the
   * watch and one query for all keys) named a real term, never mallory.
   */
  @ParameterizedTest(name = "round {0}")
  @MethodSource("dev.retsu.lock.faults.GroupFaults#rounds")
  void aHostileRoleNeverMisleadsTheGroupNorWhoLeadsItsKeys(int round, TestDatabase db)
      throws Exception {
    String scenario = "group-hostile";
    Random draw = new Random(GroupFaults.seed(scenario, round));
    Where where = GroupFaults.where(scenario, round);
    setUp(scenario, round, "every forgery, then the end of a's terms @" + where);
    Map<LockKey, List<WhoLeadsChecker.Answer>> answers = new ConcurrentHashMap<>();
    Map<LockKey, Map<String, Long>> strucks = new ConcurrentHashMap<>();
    try (Mallory mallory = new Mallory(db);
        LeaderWatch watch = LeaderWatch.open(db.dataSource())) {
      for (LockKey k : keys) {
        List<WhoLeadsChecker.Answer> list = new CopyOnWriteArrayList<>();
        answers.put(k, list);
        strucks.put(k, new ConcurrentHashMap<>());
        watch.watch(
            k,
            c ->
                list.add(
                    HostileRoleFaultIntegrationTest.answer(
                        System.nanoTime(),
                        "watch-change",
                        HostileRoleFaultIntegrationTest.WATCH_LAG,
                        c.leader())));
      }
      HostileRoleFaultIntegrationTest.Sampler sampler =
          new HostileRoleFaultIntegrationTest.Sampler(db.dataSource(), watch, keys, answers, 100);
      LeaderGroup a = start(db.dataSource(), "a");
      LeaderGroup b = start(db.dataSource(), "b");
      settled(List.of(a, b));
      sampler.start();
      List<LeaderGroup> living = new ArrayList<>(List.of(a, b));

      List<LockKey> held = new ArrayList<>(a.heldKeys());
      Collections.shuffle(held, draw);
      List<String> struck = new ArrayList<>();
      HostileRoleFaultIntegrationTest.Forgery[] forgeries =
          HostileRoleFaultIntegrationTest.Forgery.values();
      for (int i = 0; i < forgeries.length; i++) {
        LockKey k = held.get(i % held.size());
        TermChecker.Event acquired =
            rec.byKey.get(k).stream()
                .filter(e -> e.kind().equals("ACQUIRED") && e.member().equals("a"))
                .reduce((x, y) -> y)
                .orElseThrow();
        HostileRoleFaultIntegrationTest.strike(
            mallory,
            forgeries[i],
            k.value(),
            "a",
            Integer.parseInt(acquired.fields().get(2)),
            acquired.fields().get(1),
            "b");
        struck.add(forgeries[i] + " on " + k.value());
      }

      Stamp at = reach(where, a, () -> joined(living, db.dataSource(), "c"));
      long end = System.nanoTime();
      if (where == Where.CLOSE) {
        living.remove(a);
      }
      String label =
          "hostile+" + (where.ordinal() < Where.CLOSE.ordinal() ? "terminate" : "") + where;
      if (where.ordinal() < Where.CLOSE.ordinal()) {
        int victim = rec.pid(at.key(), "a", at.term());
        assertThat(db.terminateBackend(victim)).isTrue();
        end = System.nanoTime();
        rec.strike(new Strike(round, label, end, true, "a", victim));
        for (LockKey k : keys) {
          for (TermChecker.Event e : rec.byKey.get(k)) {
            if (e.kind().equals("ACQUIRED")
                && e.member().equals("a")
                && e.nanos() <= end
                && Integer.parseInt(e.fields().get(2)) == victim) {
              strucks.get(k).put("a#" + e.fields().get(0), end);
            }
          }
        }
      } else {
        rec.strike(new Strike(round, label, end, false, "a", null));
      }
      long since = end;
      awaitAftermath(
          scenario,
          round,
          label,
          () ->
              GroupRecorder.balanced(N, living)
                  && keys.stream()
                      .allMatch(k -> living.stream().anyMatch(g -> g.heldKeys().contains(k))));
      mallory.settle(WITHIN);
      settled(living);
      GroupRecorder.Result result = closeAndAnalyse();
      sampler.stop();
      // a group session shows its newest token on every key it holds (a documented limit)
      Map<Integer, java.util.Set<String>> sessionTokens = new java.util.HashMap<>();
      for (List<TermChecker.Event> events : rec.byKey.values()) {
        for (TermChecker.Event e : events) {
          if (e.kind().equals("ACQUIRED")) {
            sessionTokens
                .computeIfAbsent(
                    Integer.parseInt(e.fields().get(2)), p -> new java.util.HashSet<>())
                .add(e.fields().get(1));
          }
        }
      }
      List<String> falseAnswers = new ArrayList<>();
      for (LockKey k : keys) {
        List<TermChecker.Event> timeline = new ArrayList<>(rec.byKey.get(k));
        timeline.sort(java.util.Comparator.comparingLong(TermChecker.Event::nanos));
        for (String f :
            WhoLeadsChecker.check(
                timeline,
                answers.get(k),
                mallory.pids,
                mallory.holds,
                strucks.get(k),
                sessionTokens)) {
          falseAnswers.add(k.value() + ": " + f);
        }
      }
      System.out.printf(
          java.util.Locale.ROOT,
          "GROUP-FAULTS %s round %d forgeries=%s answers=%d false-answers=%d mallory-holds=%d"
              + " since=%.1f%n",
          scenario,
          round,
          struck,
          answers.values().stream().mapToInt(List::size).sum(),
          falseAnswers.size(),
          mallory.holds.size(),
          since / 1e6);
      assertThat(falseAnswers)
          .as(
              "%s round %d: every \"who leads\" answer names a real term (rerun with"
                  + " -Dretsu.faults.seed=%d -Dretsu.faults.rounds=%d); forgeries: %s, then %s",
              scenario, round, GroupFaults.SEED, Math.max(round, GroupFaults.ROUNDS), struck, label)
          .isEmpty();
      GroupFaults.judge(scenario, round, label + " " + struck, result);
    }
  }

  /**
   * Mallory notifies the group's own channel ({@code retsu_lock_group_<namespace>}, derivable from
   * the membership keys in {@code pg_locks}): a {@code yielded:<i>:1000000000} for every key (a
   * hand-off window of 11 days), and {@code gone:<slot>} and {@code left:<slot>} for the members'
   * slots; then member c joins. The joiner still gets its fair share, and no key has two acting
   * owners.
   */
  @ParameterizedTest(name = "round {0}")
  @MethodSource("dev.retsu.lock.faults.GroupFaults#rounds")
  void forgedGroupChannelNoticesNeitherStarveAJoinerNorGiveAKeyTwoOwners(int round, TestDatabase db)
      throws Exception {
    String scenario = "group-channel-forgeries";
    Random draw = new Random(GroupFaults.seed(scenario, round));
    setUp(scenario, round, "yielded/gone/left forged, then a join");
    try (Mallory mallory = new Mallory(db)) {
      LeaderGroup a = start(db.dataSource(), "a");
      LeaderGroup b = start(db.dataSource(), "b");
      settled(List.of(a, b));
      List<LeaderGroup> living = new ArrayList<>(List.of(a, b));
      byte[] d =
          java.security.MessageDigest.getInstance("SHA-256")
              .digest(
                  ("retsu-lock-group:" + name).getBytes(java.nio.charset.StandardCharsets.UTF_8));
      String channel =
          "retsu_lock_group_"
              + java.util.HexFormat.of().toHexDigits(java.nio.ByteBuffer.wrap(d, 0, 4).getInt());
      java.sql.Connection c = mallory.session("psql");
      for (int i = 0; i < N; i++) {
        Mallory.notify(c, channel, "yielded:" + i + ":1000000000");
      }
      for (int slot = 0; slot < 4; slot++) {
        Mallory.notify(c, channel, (draw.nextBoolean() ? "gone:" : "left:") + slot);
      }
      joined(living, db.dataSource(), "c");
      awaitAftermath(scenario, round, "channel forgeries", () -> GroupRecorder.balanced(N, living));
      GroupFaults.judge(scenario, round, "channel forgeries", closeAndAnalyse());
    }
  }
}
