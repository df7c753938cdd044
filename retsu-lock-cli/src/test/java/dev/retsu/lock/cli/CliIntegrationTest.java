package dev.retsu.lock.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.FailoverTiming;
import dev.retsu.lock.FailurePolicy;
import dev.retsu.lock.LeaderGroup;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.TakeoverMode;
import dev.retsu.lock.Term;
import dev.retsu.lock.testing.LoginOnlyRole;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The CLI, run in-process against a real PostgreSQL with live leaders. */
@ExtendWith(PostgresExtension.class)
class CliIntegrationTest {

  private static final Duration WITHIN = Duration.ofSeconds(20);
  private static final AtomicInteger KEYS = new AtomicInteger();
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

  private static String name() {
    return "job-" + KEYS.incrementAndGet();
  }

  /** A leader with short bounds, so terms and takeovers take milliseconds. */
  private LeaderLoop leader(TestDatabase db, LockKey key, String id, FailurePolicy policy) {
    LeaderLoop loop =
        track(
            LeaderLoop.builder(db.dataSource(), key)
                .candidateId(id)
                .retryInterval(Duration.ofMillis(200))
                .refreshInterval(Duration.ofMillis(300))
                .timing(
                    FailoverTiming.DEFAULT
                        .withHeartbeatInterval(Duration.ofMillis(500))
                        .withSelfFenceAfter(Duration.ofSeconds(2))
                        .withServerKeepalives(Duration.ofSeconds(1), Duration.ofSeconds(1), 2)
                        .withServerIdleSessionTimeout(Duration.ofSeconds(4))
                        .withRoundTripTimeout(Duration.ofSeconds(2)))
                .maxBackoff(Duration.ofSeconds(1))
                .closeTimeout(Duration.ofSeconds(3))
                .failurePolicy(policy)
                .build());
    CompletableFuture<Void> ended = loop.start(ctx -> ctx.ensureLeader());
    ended.exceptionally(e -> null); // an EXIT loop's end is what a test expects
    await().atMost(WITHIN).until(loop::isLeader);
    return loop;
  }

  private static String[] args(TestDatabase db, String... rest) {
    List<String> a = new ArrayList<>();
    a.add(rest[0]);
    a.add("--url");
    a.add(db.jdbcUrl());
    a.add("--user");
    a.add(db.user());
    a.addAll(List.of(rest).subList(1, rest.length));
    return a.toArray(String[]::new);
  }

  private static CliRun withPassword(TestDatabase db) {
    return new CliRun(Map.of("PGPASSWORD", db.password()), Terminal.NONE);
  }

  @Test
  void whoPrintsTheHolderItsTokenAndItsSessionRow(TestDatabase db) {
    String n = name();
    LockKey key = LockKey.named("ops", n);
    LeaderLoop a = leader(db, key, "node-a", FailurePolicy.STEP_DOWN);
    Term t = a.currentTerm().orElseThrow();

    CliRun r = withPassword(db);
    int code = r.run(args(db, "who", "--namespace", "ops", "--name", n));

    assertThat(code).as(r.err()).isEqualTo(Cli.OK);
    assertThat(r.out())
        .contains(
            "key          ops:" + n + String.format(" 0x%016x (%d)", key.value(), key.value()))
        .contains("leader       node-a")
        .contains("pid          " + t.backendPid())
        .contains("database     " + db.name())
        .contains("token        " + t.fencingToken())
        .contains("term         - (numbered by the leader itself")
        .contains("since        its session started ")
        .contains("session (pg_stat_activity)")
        .contains("  application_name retsu-lock:node-a#" + t.fencingToken())
        .contains("  user             " + db.user())
        .containsPattern("  state            (idle|active)")
        .containsPattern("  backend_start    \\d{4}-\\d\\d-\\d\\dT");
  }

  @Test
  void whoJsonIsOneObjectWithTheLeaderAndItsSession(TestDatabase db) {
    LockKey key = LockKey.of(0x5eed0000L + KEYS.incrementAndGet());
    LeaderLoop a = leader(db, key, "node-j", FailurePolicy.STEP_DOWN);
    Term t = a.currentTerm().orElseThrow();

    CliRun r = withPassword(db);
    int code = r.run(args(db, "who", "--key", String.valueOf(key.value()), "--json"));

    assertThat(code).as(r.err()).isEqualTo(Cli.OK);
    assertThat(r.outLines()).hasSize(1);
    assertThat(r.out())
        .startsWith(
            "{\"key\":{\"bigint\":\""
                + key.value()
                + "\",\"hex\":\""
                + String.format("0x%016x", key.value())
                + "\",\"name\":null},\"leader\":{\"candidate\":\"node-j\",\"pid\":"
                + t.backendPid()
                + ",\"database\":\""
                + db.name()
                + "\",\"token\":\""
                + t.fencingToken()
                + "\",\"term\":null,\"acquiredAt\":null,\"lastRenewal\":\"")
        .contains(
            "\"session\":{\"pid\":"
                + t.backendPid()
                + ",\"applicationName\":\"retsu-lock:node-j#"
                + t.fencingToken()
                + "\",\"user\":\""
                + db.user()
                + "\"")
        .containsPattern("\"state\":\"(idle|active)\"")
        .containsPattern("\"backendStart\":\"\\d{4}-");
  }

  @Test
  void whoExitsWithThreeWhenNobodyLeads(TestDatabase db) {
    CliRun text = withPassword(db);
    assertThat(text.run(args(db, "who", "--namespace", "ops", "--name", name())))
        .as(text.err())
        .isEqualTo(Cli.NO_LEADER);
    assertThat(text.out()).contains("leader       nobody holds the key");

    CliRun json = withPassword(db);
    assertThat(json.run(args(db, "who", "--key", "77", "--json"))).isEqualTo(Cli.NO_LEADER);
    assertThat(json.out().trim())
        .isEqualTo(
            "{\"key\":{\"bigint\":\"77\",\"hex\":\"0x000000000000004d\",\"name\":null},"
                + "\"leader\":null,\"session\":null,\"waiters\":[],\"foreignQueued\":false}");
  }

  @Test
  void aDatabaseErrorExitsWithOneAndPrintsTheSqlState(TestDatabase db) {
    CliRun r = new CliRun(Map.of("PGPASSWORD", db.password()), Terminal.NONE);
    String missing = db.jdbcUrl().replace("/" + db.name(), "/no_such_database");
    int code = r.run("who", "--url", missing, "--user", db.user(), "--key", "1");
    assertThat(code).isEqualTo(Cli.DATABASE_ERROR);
    assertThat(r.err()).contains("retsu-lock-cli: database error (SQLState 3D000)");
  }

  @Test
  void watchStreamsAGracefulChangeAndATerminatedLeaderInOrder(TestDatabase db) throws Exception {
    String n = name();
    LockKey key = LockKey.named("ops", n);
    CliRun r = withPassword(db);
    CompletableFuture<Integer> watching =
        CompletableFuture.supplyAsync(
            () -> r.run(args(db, "who", "--namespace", "ops", "--name", n, "--watch", "--json")));
    try {
      await().atMost(WITHIN).until(() -> r.out().contains("\"cause\":\"READ\""));

      LeaderLoop a = leader(db, key, "node-a", FailurePolicy.STEP_DOWN);
      String tokenA = a.currentTerm().orElseThrow().fencingToken().toString();
      await().atMost(WITHIN).until(() -> r.out().contains("\"token\":\"" + tokenA + "\""));
      a.close(); // graceful: a released notice

      LeaderLoop b = leader(db, key, "node-b", FailurePolicy.EXIT);
      Term tb = b.currentTerm().orElseThrow();
      await()
          .atMost(WITHIN)
          .until(() -> r.out().contains("\"token\":\"" + tb.fencingToken() + "\""));
      assertThat(db.terminateBackend(tb.backendPid())).isTrue(); // no notice: the watch's check
      await().atMost(WITHIN).until(() -> r.out().contains("\"cause\":\"ENDED\""));
    } finally {
      r.stop.countDown();
    }
    assertThat(watching.get()).as(r.err()).isEqualTo(Cli.OK);

    List<String> lines = r.outLines();
    assertThat(lines)
        .as("one JSON object per line")
        .allSatisfy(l -> assertThat(l).startsWith("{\"seenAt\":\"").endsWith("}"));
    assertThat(lines.stream().map(CliIntegrationTest::causeAndCandidate).toList())
        .containsExactly(
            "READ nobody", "ACQUIRED node-a", "RELEASED nobody", "ACQUIRED node-b", "ENDED nobody");
  }

  private static String causeAndCandidate(String line) {
    String cause = line.replaceAll(".*\"cause\":\"([A-Z]+)\".*", "$1");
    String candidate =
        line.contains("\"leader\":null")
            ? "nobody"
            : line.replaceAll(".*\"candidate\":\"([^\"]+)\".*", "$1");
    return cause + " " + candidate;
  }

  @Test
  void evictWithYesEndsTheHoldersSessionAndItsTerm(TestDatabase db) throws Exception {
    String n = name();
    LeaderLoop a = leader(db, LockKey.named("ops", n), "node-e", FailurePolicy.STEP_DOWN);
    Term t = a.currentTerm().orElseThrow();

    CliRun r = withPassword(db);
    int code = r.run(args(db, "evict", "--namespace", "ops", "--name", n, "--yes"));

    assertThat(code).as(r.err()).isEqualTo(Cli.OK);
    assertThat(r.out())
        .contains(
            "terminated the session of pid "
                + t.backendPid()
                + " (candidate node-e, token "
                + t.fencingToken());
    assertThat(db.backendExists(t.backendPid()))
        .as("the holder's pid in pg_stat_activity")
        .isFalse();
    await()
        .atMost(WITHIN)
        .until(() -> a.currentTerm().map(c -> c.number() != t.number()).orElse(true));
  }

  @Test
  void evictRefusesWithoutYesWhenThereIsNoTerminal(TestDatabase db) throws Exception {
    String n = name();
    LeaderLoop a = leader(db, LockKey.named("ops", n), "node-f", FailurePolicy.STEP_DOWN);
    Term t = a.currentTerm().orElseThrow();

    CliRun r = withPassword(db);
    int code = r.run(args(db, "evict", "--namespace", "ops", "--name", n));

    assertThat(code).isEqualTo(Cli.NOT_CONFIRMED);
    assertThat(r.err())
        .contains("refusing to evict pid " + t.backendPid())
        .contains("no terminal to ask on; pass --yes");
    assertThat(db.backendExists(t.backendPid())).isTrue();
    assertThat(a.currentTerm().map(Term::number)).contains(t.number());
  }

  @Test
  void evictAsksOnATerminalAndOnlyYesTerminates(TestDatabase db) throws Exception {
    String n = name();
    LeaderLoop a = leader(db, LockKey.named("ops", n), "node-g", FailurePolicy.STEP_DOWN);
    Term t = a.currentTerm().orElseThrow();
    List<String> asked = new ArrayList<>();

    CliRun no = new CliRun(Map.of("PGPASSWORD", db.password()), CliRun.answering("y", asked));
    assertThat(no.run(args(db, "evict", "--namespace", "ops", "--name", n)))
        .isEqualTo(Cli.NOT_CONFIRMED);
    assertThat(asked)
        .singleElement()
        .asString()
        .contains("pid " + t.backendPid())
        .endsWith("Type yes to confirm: ");
    assertThat(db.backendExists(t.backendPid())).isTrue();

    CliRun yes = new CliRun(Map.of("PGPASSWORD", db.password()), CliRun.answering("yes", asked));
    assertThat(yes.run(args(db, "evict", "--namespace", "ops", "--name", n, "--json")))
        .as(yes.err())
        .isEqualTo(Cli.OK);
    assertThat(yes.out()).startsWith("{\"result\":\"evicted\"");
    assertThat(db.backendExists(t.backendPid())).isFalse();
  }

  @Test
  void evictTerminatesNothingWhenTheSessionLetGoOfTheKeyAfterTheRead(TestDatabase db)
      throws Exception {
    // A group member's one session holds both keys and keeps its name, pid and start after it
    // yields one: only the lock itself tells that it no longer holds the named key.
    String ns = "grp" + KEYS.incrementAndGet();
    LockKey named = LockKey.named(ns, "0");
    LockKey other = LockKey.named(ns, "1");
    LeaderGroup g =
        track(
            LeaderGroup.partitioned(db.dataSource(), ns, 2)
                .candidateId("member-y")
                .sessions(1)
                .build());
    g.start(ctx -> ctx.ensureLeader());
    await().atMost(WITHIN).until(() -> g.heldCount() == 2);
    int pid = g.sessionPid(named).orElseThrow();
    assertThat(g.sessionPid(other)).contains(pid);
    Term kept = g.currentTerm(other).orElseThrow();
    List<String> asked = new ArrayList<>();
    Terminal yieldsThenConfirms =
        new Terminal() {
          @Override
          public boolean interactive() {
            return true;
          }

          @Override
          public String readLine(String prompt) {
            asked.add(prompt);
            // between the CLI's read and its terminating statement, the holder lets go of the key
            assertThat(g.yield(named, Duration.ofMinutes(5))).isTrue();
            return "yes";
          }
        };

    CliRun r = new CliRun(Map.of("PGPASSWORD", db.password()), yieldsThenConfirms);
    int code = r.run(args(db, "evict", "--namespace", ns, "--name", "0"));

    assertThat(asked).singleElement().asString().contains("pid " + pid);
    assertThat(code).as(r.out() + r.err()).isEqualTo(Cli.HOLDER_CHANGED);
    assertThat(r.out()).contains("the holder changed before the eviction; nothing terminated");
    assertThat(db.backendExists(pid)).as("the member's session in pg_stat_activity").isTrue();
    assertThat(db.advisoryKeyHolders(named.value())).isEmpty();
    assertThat(db.advisoryKeyHolders(other.value())).containsExactly(pid);
    assertThat(g.currentTerm(other).map(Term::number)).contains(kept.number());
  }

  @Test
  void evictExitsWithThreeWhenNobodyLeads(TestDatabase db) {
    CliRun r = withPassword(db);
    assertThat(r.run(args(db, "evict", "--namespace", "ops", "--name", name(), "--yes")))
        .isEqualTo(Cli.NO_LEADER);
    assertThat(r.out()).contains("nobody holds the key; nothing to evict");
  }

  @Test
  void groupListsWhoOwnsWhichKey(TestDatabase db) {
    String ns = "grp" + KEYS.incrementAndGet();
    LeaderGroup g =
        track(LeaderGroup.partitioned(db.dataSource(), ns, 3).candidateId("member-1").build());
    g.start(ctx -> ctx.ensureLeader());
    await().atMost(WITHIN).until(() -> g.heldCount() == 3);

    CliRun text = withPassword(db);
    assertThat(text.run(args(db, "who", "--group", ns, "--partitions", "4")))
        .as(text.err())
        .isEqualTo(Cli.OK);
    assertThat(text.out())
        .contains("group " + ns + ": 4 keys, 3 held by 1 candidates")
        .containsPattern("(?m)^3 +" + LockKey.named(ns, "3").value() + " +- +- +nobody$")
        .containsPattern("(?m)^  member-1 +3$");

    CliRun json = withPassword(db);
    assertThat(json.run(args(db, "who", "--group", ns, "--partitions", "3", "--json")))
        .isEqualTo(Cli.OK);
    assertThat(json.out())
        .startsWith(
            "{\"group\":\"" + ns + "\",\"partitions\":3,\"held\":3,\"owners\":{\"member-1\":3},")
        .contains("{\"partition\":2,\"key\":{\"bigint\":\"" + LockKey.named(ns, "2").value());

    CliRun watch = withPassword(db);
    CompletableFuture<Integer> watching =
        CompletableFuture.supplyAsync(
            () ->
                watch.run(
                    args(db, "who", "--group", ns, "--partitions", "3", "--watch", "--json")));
    try {
      await().atMost(WITHIN).until(() -> watch.outLines().size() == 3);
    } finally {
      watch.stop.countDown();
    }
    assertThat(watching.join()).isEqualTo(Cli.OK);
    assertThat(watch.outLines())
        .allSatisfy(
            l ->
                assertThat(l).contains("\"cause\":\"READ\"").contains("\"candidate\":\"member-1\""))
        .anySatisfy(l -> assertThat(l).contains("\"partition\":0,"))
        .anySatisfy(l -> assertThat(l).contains("\"partition\":2,"));
  }

  @Test
  void whoShowsAKeyHeldByAnotherRoleAsAForeignSessionWhateverItsName(TestDatabase db)
      throws Exception {
    LoginOnlyRole role = LoginOnlyRole.create(db, "mallory");
    open.add(0, role);
    String mallory = role.name();
    String ns = "grp" + KEYS.incrementAndGet();
    LockKey key = LockKey.named(ns, "0");
    var ds = role.dataSource();
    int pid;
    try (Connection m = ds.getConnection();
        PreparedStatement ps =
            m.prepareStatement(
                "SELECT pg_catalog.pg_backend_pid(), pg_catalog.set_config('application_name',"
                    + " 'retsu-lock:node-x#A1A0C761', false), pg_catalog.pg_advisory_lock(?)")) {
      ps.setLong(1, key.value());
      try (var rs = ps.executeQuery()) {
        rs.next();
        pid = rs.getInt(1);
      }

      CliRun text = withPassword(db);
      assertThat(text.run(args(db, "who", "--namespace", ns, "--name", "0")))
          .as(text.err())
          .isEqualTo(Cli.OK);
      assertThat(text.out())
          .contains(
              "leader       none: a foreign session holds the key (role "
                  + mallory
                  + ", not the candidates' role: the CLI's own login role")
          .contains("pid          " + pid)
          .contains("token        - (a foreign session's name counts for nothing)")
          .doesNotContain("token        A1A0C761");

      CliRun json = withPassword(db);
      assertThat(json.run(args(db, "who", "--namespace", ns, "--name", "0", "--json")))
          .isEqualTo(Cli.OK);
      assertThat(json.out())
          .contains("\"leader\":{\"candidate\":null,\"pid\":" + pid)
          .contains("\"token\":null")
          .contains("\"foreign\":true")
          .contains("\"user\":\"" + mallory + "\"");

      CliRun group = withPassword(db);
      assertThat(group.run(args(db, "who", "--group", ns, "--partitions", "2"))).isEqualTo(Cli.OK);
      assertThat(group.out())
          .contains("group " + ns + ": 2 keys, 0 held by 0 candidates, 1 held by foreign sessions")
          .containsPattern("(?m)^0 +" + key.value() + " +" + pid + " +- +foreign session \\(role ")
          .doesNotContain("node-x");

      // Told that the candidates log in as that role, the CLI reads the name as theirs.
      CliRun named = withPassword(db);
      assertThat(
              named.run(
                  args(db, "who", "--namespace", ns, "--name", "0", "--candidate-role", mallory)))
          .isEqualTo(Cli.OK);
      assertThat(named.out()).contains("leader       node-x").contains("token        A1A0C761");
    }
  }

  @Test
  void whoListsTheSessionsQueuedOnTheKeyAndAForeignOneAsForeign(TestDatabase db) throws Exception {
    LoginOnlyRole role = LoginOnlyRole.create(db, "mallory");
    open.add(0, role);
    String mallory = role.name();
    // a group's partition 0, so that --group reads it too
    String ns = "grp" + KEYS.incrementAndGet();
    String n = "0";
    LockKey key = LockKey.named(ns, n);
    leader(db, key, "node-a", FailurePolicy.STEP_DOWN);
    // a WAIT standby of the candidates' role queues first, for one long wait
    LeaderLoop standby =
        track(
            LeaderLoop.builder(db.dataSource(), key)
                .candidateId("node-w")
                .takeover(TakeoverMode.WAIT)
                .waitTimeout(Duration.ofMinutes(2))
                .build());
    standby.start(ctx -> ctx.ensureLeader()).exceptionally(e -> null);
    await().atMost(WITHIN).until(() -> db.waitingForAdvisoryLocks("retsu-lock:node-w") == 1);
    int standbyPid =
        db.queryInts(
                "SELECT pid FROM pg_stat_activity WHERE application_name = ?", "retsu-lock:node-w")
            .get(0);

    // then mallory, named as a candidate's term, queues behind it with pg_advisory_lock
    var ds = role.dataSource();
    Connection m = ds.getConnection();
    int malloryPid;
    try (PreparedStatement ps =
            m.prepareStatement(
                "SELECT pg_catalog.pg_backend_pid(), pg_catalog.set_config('application_name',"
                    + " 'retsu-lock:x#A1A0A1', false)");
        var rs = ps.executeQuery()) {
      rs.next();
      malloryPid = rs.getInt(1);
    }
    CompletableFuture<Void> queued =
        CompletableFuture.runAsync(
            () -> {
              try (PreparedStatement ps =
                  m.prepareStatement("SELECT pg_catalog.pg_advisory_lock(?)")) {
                ps.setLong(1, key.value());
                ps.executeQuery().close();
              } catch (java.sql.SQLException e) {
                throw new IllegalStateException(e);
              }
            });
    try {
      await().atMost(WITHIN).until(() -> db.waitingForAdvisoryLocks("retsu-lock:x#A1A0A1") == 1);

      CliRun text = withPassword(db);
      assertThat(text.run(args(db, "who", "--namespace", ns, "--name", n)))
          .as(text.err())
          .isEqualTo(Cli.OK);
      assertThat(text.out())
          .contains("leader       node-a")
          .contains("queued       2 sessions wait for the key, next to be granted first")
          .containsPattern(
              "(?m)^  1\\. pid " + standbyPid + "  node-w  waiting since \\d{4}-\\d\\d-\\d\\dT")
          .containsPattern(
              "(?m)^  2\\. pid "
                  + malloryPid
                  + "  foreign session \\(role "
                  + mallory
                  + "\\)  waiting since ")
          .contains(
              "warning      foreign session queued: pid "
                  + malloryPid
                  + " (role "
                  + mallory
                  + ", not the candidates' role: the CLI's own login role")
          .contains(
              "will be granted the key the moment the holder's session ends and the 1 queued"
                  + " ahead of it have had their turn")
          .doesNotContainPattern("pid " + malloryPid + "  x");

      CliRun json = withPassword(db);
      assertThat(json.run(args(db, "who", "--namespace", ns, "--name", n, "--json")))
          .as(json.err())
          .isEqualTo(Cli.OK);
      assertThat(json.outLines()).hasSize(1);
      assertThat(json.out())
          .contains("\"leader\":{\"candidate\":\"node-a\"")
          .contains(
              "\"waiters\":[{\"position\":1,\"pid\":"
                  + standbyPid
                  + ",\"candidate\":\"node-w\",\"preferred\":false,\"foreign\":false,\"role\":\""
                  + db.user()
                  + "\",\"mode\":\"ExclusiveLock\",\"waitingSince\":\"")
          .contains(
              "{\"position\":2,\"pid\":"
                  + malloryPid
                  + ",\"candidate\":null,\"preferred\":false,\"foreign\":true,\"role\":\""
                  + mallory
                  + "\",\"mode\":\"ExclusiveLock\",\"waitingSince\":\"")
          .contains("\"applicationName\":\"retsu-lock:x#A1A0A1\"}]")
          .contains("}],\"foreignQueued\":true}");

      CliRun group = withPassword(db);
      assertThat(group.run(args(db, "who", "--group", ns, "--partitions", "2")))
          .as(group.err())
          .isEqualTo(Cli.OK);
      assertThat(group.out())
          .contains("partition 0:\nqueued       2 sessions wait for the key")
          .containsPattern("(?m)^  1\\. pid " + standbyPid + "  node-w  ")
          .containsPattern(
              "(?m)^  2\\. pid " + malloryPid + "  foreign session \\(role " + mallory + "\\)  ")
          .contains("warning      foreign session queued: pid " + malloryPid)
          .doesNotContain("partition 1:");

      CliRun groupJson = withPassword(db);
      assertThat(groupJson.run(args(db, "who", "--group", ns, "--partitions", "2", "--json")))
          .as(groupJson.err())
          .isEqualTo(Cli.OK);
      assertThat(groupJson.out())
          .contains(
              "\"waiters\":[{\"position\":1,\"pid\":"
                  + standbyPid
                  + ",\"candidate\":\"node-w\",\"preferred\":false,\"foreign\":false,")
          .contains(
              "{\"position\":2,\"pid\":"
                  + malloryPid
                  + ",\"candidate\":null,\"preferred\":false,\"foreign\":true,")
          .contains("{\"partition\":1,")
          .contains("\"leader\":null,\"waiters\":[]}]")
          .contains("]}],\"foreignQueued\":true}");
    } finally {
      db.terminateBackend(malloryPid);
      queued.exceptionally(e -> null).join();
      m.close();
    }
  }
}
