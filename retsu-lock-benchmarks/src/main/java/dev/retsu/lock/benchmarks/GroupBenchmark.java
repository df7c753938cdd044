package dev.retsu.lock.benchmarks;

import dev.retsu.lock.LeaderGroup;
import dev.retsu.lock.testing.ProcessOutput;
import dev.retsu.lock.testing.TermChecker;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.BooleanSupplier;

/**
 * Many keys per process: {@code keys} keys shared by {@code members} {@link LeaderGroup} members,
 * each in its own JVM ({@link GroupMemberMain}), with default settings (4 sessions, membership
 * every 2 s). Measures the sessions used, the time until every key is owned and the group balanced
 * after a cold start, after one member is killed with SIGKILL, after a member joins and after an
 * immediate (crash-like) restart of the server; the server's cost at rest (statements, CPU, memory
 * against the idle server); and checks every key's timeline with the fault suite's {@link
 * TermChecker}: no moment where a key has two acting owners. Writes {@code group-results.md} naming
 * the commit, the machine and its load average.
 */
final class GroupBenchmark {

  /**
   * The server's state at one moment.
   *
   * @param memory Pss of the postmaster and its children, null when the server is not local
   * @param clientBackends client sessions, the harness's probe included
   */
  record ServerState(ServerProbe.Memory memory, int clientBackends) {}

  /**
   * The server's cost at rest.
   *
   * @param statementsPerSecond from pg_stat_statements, -1 without it
   * @param cpuPercent of one core, -1 when the server is not local
   * @param groupSessions the members' sessions on the server
   * @param state memory and backends at the end of the window
   * @param idle the same before any member started
   */
  record Rest(
      double statementsPerSecond,
      double cpuPercent,
      int groupSessions,
      ServerState state,
      ServerState idle) {}

  /**
   * One measured scenario.
   *
   * @param startNanos when the scenario began (System.nanoTime): its events and violations are
   *     those from here to the next scenario's start
   * @param rest the cost at rest, null for scenarios that do not measure it
   * @param terms terms started in this scenario's window, -1 before the check
   * @param violations TermChecker violations in this scenario's window, -1 before the check
   */
  record Result(
      int keys,
      int members,
      String scenario,
      long ownedMillis,
      long balancedMillis,
      int sessions,
      Rest rest,
      String note,
      long startNanos,
      int terms,
      int violations) {

    Result checked(int terms, int violations, String more) {
      String n = more.isEmpty() ? note : note.isEmpty() ? more : note + "; " + more;
      return new Result(
          keys,
          members,
          scenario,
          ownedMillis,
          balancedMillis,
          sessions,
          rest,
          n,
          startNanos,
          terms,
          violations);
    }
  }

  private final BenchEnv env;
  private final Path out;
  private final Duration window;
  private final Duration limit = Duration.ofSeconds(120);

  GroupBenchmark(BenchEnv env, Path out, Duration window) {
    this.env = env;
    this.out = out;
    this.window = window;
  }

  /** What a member printed last: keys held, sessions open, terms ended so far. */
  private record Count(int held, int sessions, long losses) {}

  /** One member JVM and what it printed last. */
  private static final class Member {
    final String id;
    final Process process;
    final Path events;
    volatile long startedMicros = -1;
    volatile Count count = new Count(0, 0, 0);

    Member(String id, Process process, Path events) {
      this.id = id;
      this.process = process;
      this.events = events;
      ProcessOutput.follow(process, "retsu-lock-bench-group-reader-" + id, this::accept);
    }

    int held() {
      return count.held();
    }

    private void accept(String line) {
      String[] p = line.split(" ");
      try {
        if (p[0].equals("STARTED")) {
          startedMicros = Long.parseLong(p[1]);
        } else if (p[0].equals("HELD") && p.length >= 5) {
          count = new Count(Integer.parseInt(p[2]), Integer.parseInt(p[3]), Long.parseLong(p[4]));
        }
      } catch (RuntimeException e) {
        // a line cut short as the process died; alive() says so
      }
    }

    void kill() throws InterruptedException {
      process.destroyForcibly(); // SIGKILL
      process.waitFor();
    }

    /** A graceful stop: EOF on its stdin makes the member close its group. */
    void stop() throws IOException, InterruptedException {
      if (process.isAlive()) {
        process.getOutputStream().close(); // EOF on stdin: a graceful close
        if (!process.waitFor(20, java.util.concurrent.TimeUnit.SECONDS)) {
          process.destroyForcibly();
        }
      }
    }

    private void closeQuietly() {
      try {
        stop();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        process.destroyForcibly();
      } catch (IOException e) {
        process.destroyForcibly();
      }
    }
  }

  private Member launch(String group, int keys, String id, int sessions) throws IOException {
    Path events = out.resolve("group-" + id + ".events");
    Files.deleteIfExists(events);
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.add("-Xmx256m");
    command.add("-XX:+UseSerialGC");
    command.add("-XX:TieredStopAtLevel=1");
    command.add(
        "-Dorg.slf4j.simpleLogger.defaultLogLevel="
            + System.getProperty("retsu.bench.memberLogLevel", "warn"));
    command.add("-Dorg.slf4j.simpleLogger.showDateTime=true");
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(GroupMemberMain.class.getName());
    command.add(env.jdbcUrl());
    command.add(env.user());
    command.add(env.password().isEmpty() ? "-" : env.password());
    command.add(group);
    command.add(Integer.toString(keys));
    command.add(id);
    command.add(Integer.toString(sessions));
    command.add(events.toString());
    ProcessBuilder pb = new ProcessBuilder(command);
    pb.redirectError(
        ProcessBuilder.Redirect.appendTo(out.resolve("group-" + id + ".log").toFile()));
    return new Member(id, pb.start(), events);
  }

  private static boolean owned(List<Member> live, int keys) {
    int sum = 0;
    for (Member m : live) {
      sum += m.held();
    }
    return sum == keys;
  }

  private static boolean balanced(List<Member> live, int keys) {
    int quota = (keys + live.size() - 1) / live.size();
    return owned(live, keys) && live.stream().allMatch(m -> m.held() <= quota);
  }

  private static int sessions(List<Member> live) {
    return live.stream().mapToInt(m -> m.count.sessions()).max().orElse(0);
  }

  /** Milliseconds until the condition holds, polled every 10 ms; -1 past the limit. */
  private long until(long t0, BooleanSupplier condition) throws InterruptedException {
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - t0 > limit.toNanos()) {
        return -1;
      }
      Thread.sleep(10);
    }
    return (System.nanoTime() - t0) / 1_000_000;
  }

  /**
   * Runs the scenarios for one member count, then checks every key's timeline.
   *
   * @param keys keys in the group
   * @param members members at the start
   * @param sessions sessions per member
   */
  List<Result> run(int keys, int members, int sessions) throws Exception {
    String group = "bench-" + Long.toHexString(ThreadLocalRandom.current().nextLong() >>> 24);
    List<Result> results = new ArrayList<>();
    List<Member> live = new ArrayList<>();
    List<Member> all = new ArrayList<>();
    String victimId = null;
    long restartNanos = -1;
    try {
      ServerState idle = state();
      Progress.log("group: %d keys over %d members, cold start", keys, members);
      long t0 = System.nanoTime();
      for (int i = 0; i < members; i++) {
        Member m = launch(group, keys, "g" + members + "-m" + i, sessions);
        live.add(m);
        all.add(m);
      }
      long owned = until(t0, () -> owned(live, keys));
      long balanced = until(t0, () -> balanced(live, keys));
      int used = sessions(live);
      Thread.sleep(3_000); // past the first membership rounds
      Rest rest = measure(idle);
      results.add(
          new Result(
              keys,
              members,
              "cold start (from launching the JVMs) and at rest",
              owned,
              balanced,
              used,
              rest,
              rest.groupSessions() + " group sessions on the server",
              t0,
              -1,
              -1));

      Progress.log("group: kill -9 of one of %d members", members);
      Member victim = live.remove(0);
      victimId = victim.id;
      long k0 = System.nanoTime();
      victim.kill();
      owned = until(k0, () -> owned(live, keys));
      balanced = until(k0, () -> balanced(live, keys));
      results.add(
          new Result(
              keys,
              members,
              "kill -9 of one member (" + (members - 1) + " left)",
              owned,
              balanced,
              sessions(live),
              null,
              "",
              k0,
              -1,
              -1));

      Progress.log("group: a member joins %d members", live.size());
      long launched = System.nanoTime();
      Member joiner = launch(group, keys, "g" + members + "-join", sessions);
      all.add(joiner);
      live.add(joiner);
      long started = until(launched, () -> joiner.startedMicros > 0);
      long j0 = System.nanoTime();
      balanced = until(j0, () -> balanced(live, keys) && joiner.held() > 0);
      results.add(
          new Result(
              keys,
              members,
              "a member joins (from its start() returning; JVM start took " + started + " ms)",
              -1,
              balanced,
              joiner.count.sessions(),
              null,
              "joiner holds " + joiner.held(),
              launched,
              -1,
              -1));

      if (env.canRestart()) {
        Thread.sleep(3_000); // a membership round past the balance: no yield under way
        Progress.log("group: immediate restart of the server under %d members", live.size());
        // Every session dies with the server, so each member's terms of now all end.
        Map<Member, Long> endedAfter = new HashMap<>();
        for (Member m : live) {
          Count c = m.count;
          endedAfter.put(m, c.losses() + c.held());
        }
        BooleanSupplier allEnded =
            () -> live.stream().allMatch(m -> m.count.losses() >= endedAfter.get(m));
        restartNanos = System.nanoTime();
        long r0 = restartNanos;
        env.restartImmediately();
        long up = (System.nanoTime() - r0) / 1_000_000;
        owned = until(r0, () -> allEnded.getAsBoolean() && owned(live, keys));
        balanced = until(r0, () -> allEnded.getAsBoolean() && balanced(live, keys));
        results.add(
            new Result(
                keys,
                members,
                "immediate restart of the server (" + live.size() + " members)",
                owned,
                balanced,
                sessions(live),
                null,
                "server stopped (SIGQUIT) and accepting again after " + up + " ms",
                r0,
                -1,
                -1));
      }
    } finally {
      for (Member m : all) {
        m.closeQuietly();
      }
    }
    Progress.log("group: checking every key's timeline of %d members", all.size());
    return check(results, all, victimId, restartNanos);
  }

  /**
   * How long the keys of a departed member took to be owned again by the others, over repetitions.
   *
   * @param members members before each departure
   * @param keysPerMember keys per member (the group has members x keysPerMember keys)
   * @param kind {@code graceful leave} or {@code kill -9}
   * @param ownedAgainMillis per repetition: from the departure until the last of the departed
   *     member's keys began a term on another member, from the members' own event stamps (one
   *     monotonic clock); -1 when a key was not taken again within the limit
   * @param parentMillis per repetition: until the parent saw the survivors' counts add up to every
   *     key (their counts are printed when they change, checked every 20 ms)
   * @param departedKeys per repetition: keys the departed member held when it left
   * @param terms terms started in these repetitions' windows
   * @param violations TermChecker violations in these repetitions' windows
   */
  record Departure(
      int members,
      int keysPerMember,
      String kind,
      List<Long> ownedAgainMillis,
      List<Long> parentMillis,
      List<Integer> departedKeys,
      int terms,
      int violations) {}

  /** One departure as it happened: who, when (System.nanoTime), how. */
  private record Left(Member member, long nanos, boolean killed) {}

  /** One lock session of a live member terminated: whose, when (System.nanoTime), its pid. */
  private record LostSession(Member member, long nanos, int pid) {}

  /**
   * A lock session of a live member, not its membership session (which holds the group's slot
   * {@code (ns, s)}, {@code s < 256}, {@code ns} the first 4 bytes of SHA-256 of {@code
   * retsu-lock-group:<name>}): the pid that holds the most keys.
   */
  private int lockSessionOf(String group, Member m) throws Exception {
    byte[] d =
        java.security.MessageDigest.getInstance("SHA-256")
            .digest(("retsu-lock-group:" + group).getBytes(StandardCharsets.UTF_8));
    long ns = Integer.toUnsignedLong(java.nio.ByteBuffer.wrap(d, 0, 4).getInt());
    try (java.sql.Connection c = env.connect();
        java.sql.PreparedStatement ps =
            c.prepareStatement(
                "SELECT a.pid FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid AND"
                    + " l.locktype = 'advisory' AND l.granted WHERE a.application_name LIKE ? AND"
                    + " NOT EXISTS (SELECT 1 FROM pg_locks s WHERE s.pid = a.pid AND s.locktype ="
                    + " 'advisory' AND s.objsubid = 2 AND s.classid = ?::oid AND s.objid < 256)"
                    + " GROUP BY a.pid ORDER BY count(*) DESC LIMIT 1")) {
      ps.setString(1, "retsu-lock:" + m.id + "#%");
      ps.setLong(2, ns);
      try (java.sql.ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          throw new IllegalStateException(m.id + " shows no lock session besides its membership");
        }
        return rs.getInt(1);
      }
    }
  }

  private void terminate(int pid) throws Exception {
    try (java.sql.Connection c = env.connect();
        java.sql.Statement st = c.createStatement()) {
      st.execute("SELECT pg_terminate_backend(" + pid + ")");
    }
  }

  /**
   * Departures at one shape: {@code members} members over {@code members x keysPerMember} keys; in
   * each repetition one member leaves gracefully (stdin closed: {@code close()}), a new member
   * takes its place, then one is killed with SIGKILL and replaced. After all repetitions every
   * key's timeline goes through TermChecker.
   */
  List<Departure> departures(
      int members, int keysPerMember, int sessions, int reps, Duration settle) throws Exception {
    int keys = members * keysPerMember;
    String group = "bench-d-" + Long.toHexString(ThreadLocalRandom.current().nextLong() >>> 24);
    String tag = "d" + members + "x" + keysPerMember;
    List<Member> live = new ArrayList<>();
    List<Member> all = new ArrayList<>();
    List<Left> left = new ArrayList<>();
    List<Long> parentLeave = new ArrayList<>();
    List<Long> parentKill = new ArrayList<>();
    List<LostSession> lostSessions = new ArrayList<>();
    List<Long> parentLost = new ArrayList<>();
    try {
      Progress.log("group departures: %d members x %,d keys", members, keysPerMember);
      long t0 = System.nanoTime();
      for (int i = 0; i < members; i++) {
        Member m = launch(group, keys, tag + "-m" + i, sessions);
        live.add(m);
        all.add(m);
      }
      if (until(t0, () -> balanced(live, keys)) < 0) {
        throw new IllegalStateException(
            "the group of " + members + " never balanced " + keys + " keys; see " + out);
      }
      for (int rep = 1; rep <= reps; rep++) {
        for (boolean kill : new boolean[] {false, true}) {
          Thread.sleep(settle.toMillis()); // membership rounds past the balance: no yield under way
          Member victim = live.remove(ThreadLocalRandom.current().nextInt(live.size()));
          long d0 = System.nanoTime();
          if (kill) {
            victim.kill();
          } else {
            victim.process.getOutputStream().close(); // EOF on stdin: close() the group
          }
          left.add(new Left(victim, d0, kill));
          long owned = until(d0, () -> owned(live, keys));
          (kill ? parentKill : parentLeave).add(owned);
          Progress.log(
              "group departures: %s of a member of %d (%,d keys each), rep %d: the others own"
                  + " every key after %d ms (parent's view)",
              kill ? "kill -9" : "graceful leave", members, keysPerMember, rep, owned);
          if (!kill && !victim.process.waitFor(20, java.util.concurrent.TimeUnit.SECONDS)) {
            victim.process.destroyForcibly();
          }
          Member joiner = launch(group, keys, tag + "-r" + rep + (kill ? "k" : "l"), sessions);
          all.add(joiner);
          live.add(joiner);
          long j0 = System.nanoTime();
          if (until(j0, () -> balanced(live, keys) && joiner.held() > 0) < 0) {
            throw new IllegalStateException(
                "the group of " + members + " did not balance after a member joined; see " + out);
          }
        }
        // A lock session of a live member ends (terminated): its keys are free, the member lives.
        Thread.sleep(settle.toMillis());
        Member owner = live.get(ThreadLocalRandom.current().nextInt(live.size()));
        int pid = lockSessionOf(group, owner);
        long lossesBefore = owner.count.losses();
        long s0 = System.nanoTime();
        terminate(pid);
        lostSessions.add(new LostSession(owner, s0, pid));
        long owned = until(s0, () -> owner.count.losses() > lossesBefore && owned(live, keys));
        parentLost.add(owned);
        Progress.log(
            "group departures: a lock session of a live member of %d (%,d keys each) terminated,"
                + " rep %d: every key owned again after %d ms (parent's view)",
            members, keysPerMember, rep, owned);
        if (until(System.nanoTime(), () -> balanced(live, keys)) < 0) {
          throw new IllegalStateException(
              "the group of " + members + " did not balance after a lost session; see " + out);
        }
      }
    } finally {
      for (Member m : all) {
        m.closeQuietly();
      }
    }
    Progress.log("group departures: checking every key's timeline of %d members", all.size());
    Timelines t = new Timelines();
    for (Member m : all) {
      t.read(m);
    }
    for (List<TermChecker.Event> es : t.byKey.values()) {
      es.sort(Comparator.comparingLong(TermChecker.Event::nanos));
    }
    Set<String> killed = new HashSet<>();
    for (Left l : left) {
      if (l.killed()) {
        killed.add(l.member().id);
      }
    }
    List<TermChecker.Violation> violations =
        TermChecker.analyseEach(
            t.byKey, killed, (key, acquired) -> killed.contains(acquired.member()));
    if (!violations.isEmpty()) {
      Path file = out.resolve("group-violations-" + tag + ".txt");
      Files.write(
          file,
          violations.stream().limit(1_000).map(TermChecker.Violation::text).toList(),
          StandardCharsets.UTF_8);
      Progress.log(
          "group departures: %d violations, the first 1,000 in %s", violations.size(), file);
    }
    // terms and violations by the departure whose window holds them (before the first: the start)
    int[] terms = new int[left.size() + 1];
    int[] found = new int[left.size() + 1];
    for (List<TermChecker.Event> es : t.byKey.values()) {
      for (TermChecker.Event ev : es) {
        if (ev.kind().equals("ACQUIRED")) {
          terms[departureWindow(left, ev.nanos())]++;
        }
      }
    }
    for (TermChecker.Violation v : violations) {
      found[departureWindow(left, v.nanos())]++;
    }
    List<Departure> result = new ArrayList<>();
    for (boolean kill : new boolean[] {false, true}) {
      List<Long> again = new ArrayList<>();
      List<Integer> departed = new ArrayList<>();
      int tTerms = 0;
      int tFound = kill ? 0 : found[0]; // the cold start's count goes with the first kind
      for (int i = 0; i < left.size(); i++) {
        Left l = left.get(i);
        if (l.killed() != kill) {
          continue;
        }
        long[] r = ownedAgain(t, l);
        again.add(r[0]);
        departed.add((int) r[1]);
        tTerms += terms[i + 1];
        tFound += found[i + 1];
      }
      result.add(
          new Departure(
              members,
              keysPerMember,
              kill ? "kill -9" : "graceful leave",
              again,
              kill ? parentKill : parentLeave,
              departed,
              tTerms,
              tFound));
    }
    List<Long> again = new ArrayList<>();
    List<Integer> freed = new ArrayList<>();
    for (LostSession l : lostSessions) {
      long[] r = ownedAgainAfterSessionLost(t, l);
      again.add(r[0]);
      freed.add((int) r[1]);
    }
    result.add(
        new Departure(
            members,
            keysPerMember,
            "a lock session of a live member terminated",
            again,
            parentLost,
            freed,
            0,
            0));
    return result;
  }

  /**
   * The keys whose term of {@code l}'s member was open at the strike and ended as {@code
   * SESSION_LOST} within 10 s after it (the terminated session's keys), and for each the first term
   * of any member, that one included, begun after that end: returns {the longest from the strike in
   * ms (-1 when a key was not taken again), the number of keys}.
   */
  private static long[] ownedAgainAfterSessionLost(Timelines t, LostSession l) {
    long worst = 0;
    int keys = 0;
    String id = l.member().id;
    for (List<TermChecker.Event> es : t.byKey.values()) {
      boolean open = false;
      long end = -1;
      for (TermChecker.Event ev : es) {
        if (!ev.member().equals(id)) {
          continue;
        }
        if (ev.nanos() - l.nanos() < 0) {
          open = ev.kind().equals("ACQUIRED") || (open && !ev.kind().equals("LOST"));
        } else if (open && ev.kind().equals("LOST")) {
          if (ev.nanos() - l.nanos() < 10_000_000_000L
              && ev.fields().size() > 1
              && ev.fields().get(1).equals("SESSION_LOST")) {
            end = ev.nanos();
          }
          break;
        }
      }
      if (end < 0) {
        continue;
      }
      keys++;
      long next = -1;
      for (TermChecker.Event ev : es) {
        if (ev.kind().equals("ACQUIRED") && ev.nanos() - end >= 0) {
          next = ev.nanos();
          break;
        }
      }
      worst = worst(worst, next, l.nanos());
    }
    return new long[] {worst, keys};
  }

  /**
   * The longest time so far with one more key: -1 once a key was not taken again ({@code next} <
   * 0), else the longer of {@code worst} and {@code next - from}, in ms.
   */
  private static long worst(long worst, long next, long from) {
    if (next < 0 || worst < 0) {
      return -1;
    }
    return Math.max(worst, (next - from) / 1_000_000);
  }

  private static int departureWindow(List<Left> left, long nanos) {
    int w = 0;
    while (w < left.size() && nanos - left.get(w).nanos() >= 0) {
      w++;
    }
    return w;
  }

  /**
   * The departed member's keys (its terms open at the departure) and, for each, the first term of
   * another member that began after it: returns {the longest of those in ms (-1 when a key was not
   * taken again), the number of keys}.
   */
  private static long[] ownedAgain(Timelines t, Left l) {
    long worst = 0;
    int keys = 0;
    for (List<TermChecker.Event> es : t.byKey.values()) {
      boolean open = false;
      long lastStart = Long.MIN_VALUE;
      for (TermChecker.Event ev : es) {
        if (ev.nanos() - l.nanos() >= 0) {
          break;
        }
        if (!ev.member().equals(l.member().id)) {
          continue;
        }
        if (ev.kind().equals("ACQUIRED")) {
          open = true;
          lastStart = ev.nanos();
        } else if (ev.kind().equals("LOST")) {
          open = false;
        }
      }
      if (!open) {
        continue;
      }
      keys++;
      long next = -1;
      for (TermChecker.Event ev : es) {
        if (ev.kind().equals("ACQUIRED")
            && !ev.member().equals(l.member().id)
            && ev.nanos() - lastStart > 0
            && ev.nanos() - l.nanos() >= 0) {
          next = ev.nanos();
          break;
        }
      }
      worst = worst(worst, next, l.nanos());
    }
    return new long[] {worst, keys};
  }

  /** Appends the departure table to {@code group-results.md} and writes {@code group.svg}. */
  static void writeDepartures(Path out, List<Departure> departures) throws IOException {
    if (departures.isEmpty()) {
      return;
    }
    StringBuilder md =
        new StringBuilder(
            "\n## A member leaves: until all its keys are owned again by the others\n\n"
                + "Each repetition: a graceful leave (the member's stdin is closed and it calls"
                + " `close()`), a new member takes its place and the group balances, then a `kill"
                + " -9` of a member, replaced the same way, each a settle time (3 s unless the run says) after the previous balance."
                + " The time runs from the departure (the parent's `System.nanoTime()` right before"
                + " the signal or the close) to the last of the departed member's keys starting a"
                + " term on another member, from the members' event files (CLOCK_MONOTONIC, one"
                + " clock for every process); the parent's own view (the survivors' counts add up"
                + " to every key, printed every 20 ms) beside it. Acting overlap: TermChecker over"
                + " every key's timeline, violations in these repetitions' windows (the first"
                + " kind's count also covers the cold start). Then, still in each repetition, one"
                + " lock session of a live member (not its membership session) is terminated"
                + " (`pg_terminate_backend`): its time runs to the last of that session's keys"
                + " starting a term on any member, the same member included; its terms and"
                + " violations are counted in the `kill -9` rows' windows (0 in its own row).\n\n"
                + "| members | keys per member | departure | n | keys of the departed member"
                + " (median) | all owned again, median (ms) | min / max (ms) | parent's view,"
                + " median (ms) | terms started | two acting owners (TermChecker violations) |\n"
                + "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    List<SvgChart.Panel> panels = new ArrayList<>();
    for (String kind :
        List.of("graceful leave", "kill -9", "a lock session of a live member terminated")) {
      List<SvgChart.Series> series = new ArrayList<>();
      for (Departure d : departures) {
        if (!d.kind().equals(kind)) {
          continue;
        }
        List<Long> ok = d.ownedAgainMillis().stream().filter(v -> v >= 0).toList();
        long failed = d.ownedAgainMillis().size() - ok.size();
        Stats st = Stats.of(ok.stream().map(v -> v * 1000).toList());
        Stats parent =
            Stats.of(d.parentMillis().stream().filter(v -> v >= 0).map(v -> v * 1000).toList());
        Stats keys = Stats.of(d.departedKeys().stream().map(v -> (long) v * 1000).toList());
        md.append(
            String.format(
                Locale.ROOT,
                "| %d | %,d | %s | %d | %s | %s | %s / %s%s | %s | %d | %d |%n",
                d.members(),
                d.keysPerMember(),
                d.kind(),
                d.ownedAgainMillis().size(),
                keys.n() == 0 ? "-" : String.format(Locale.ROOT, "%,d", keys.median() / 1000),
                Stats.ms(st.median()),
                Stats.ms(st.min()),
                Stats.ms(st.max()),
                failed > 0 ? " (" + failed + " not taken again)" : "",
                Stats.ms(parent.median()),
                d.terms(),
                d.violations()));
        series.add(
            new SvgChart.Series(
                String.format(Locale.ROOT, "%d members x %,d keys", d.members(), d.keysPerMember()),
                ok.stream().map(v -> (double) Math.max(v, 1)).toList()));
      }
      panels.add(
          new SvgChart.Panel(kind.startsWith("a lock") ? kind : kind + " of a member", series));
    }
    Files.writeString(
        out.resolve("group-results.md"),
        Files.readString(out.resolve("group-results.md")) + md,
        StandardCharsets.UTF_8);
    Files.writeString(
        out.resolve("group.svg"),
        SvgChart.render(
            "LeaderGroup: a member leaves, until all its keys are owned again (commit "
                + commit()
                + ")",
            "departure to the last of its keys taken by another member, ms (log scale)",
            panels,
            true,
            false));
  }

  /** The events of every member, one timeline per key; lines cut by a kill -9 are counted. */
  private static final class Timelines {
    final Map<Long, List<TermChecker.Event>> byKey = new HashMap<>();
    int unreadable;

    void read(Member m) throws IOException {
      if (!Files.exists(m.events)) {
        return;
      }
      try (BufferedReader r = Files.newBufferedReader(m.events, StandardCharsets.US_ASCII)) {
        String line;
        while ((line = r.readLine()) != null) {
          String[] p = line.split(" ");
          String kind =
              p.length < 4
                  ? null
                  : switch (p[0]) {
                    case "A" -> p.length == 5 ? "ACQUIRED" : null;
                    case "C" -> "CHECK";
                    case "L" -> p.length == 5 ? "LOST" : null;
                    default -> null;
                  };
          if (kind == null) {
            unreadable++;
            continue;
          }
          List<String> fields = p.length == 5 ? List.of(p[3], p[4]) : List.of(p[3]);
          byKey
              .computeIfAbsent(Long.parseLong(p[2]), k -> new ArrayList<>())
              .add(new TermChecker.Event(Long.parseLong(p[1]), m.id, kind, fields));
        }
      }
    }

    /** "key|member#term" of the terms started before the moment and not reported lost by then. */
    Set<String> liveAt(long nanos) {
      Set<String> open = new HashSet<>();
      for (Map.Entry<Long, List<TermChecker.Event>> e : byKey.entrySet()) {
        for (TermChecker.Event ev : e.getValue()) {
          if (ev.nanos() >= nanos) {
            continue;
          }
          String id = e.getKey() + "|" + ev.member() + "#" + ev.fields().get(0);
          if (ev.kind().equals("ACQUIRED")) {
            open.add(id);
          } else if (ev.kind().equals("LOST")) {
            open.remove(id);
          }
        }
      }
      return open;
    }

    /**
     * What the members' own timelines say about a restart at the moment.
     *
     * @param retaken keys with a term started after it
     * @param newer of those, keys whose first new token is newer than their last one before
     * @param firstEndMillis the first term end after it, -1 when none
     * @param lastStartMillis the last term start after it, -1 when none
     */
    record AfterRestart(int retaken, int newer, long firstEndMillis, long lastStartMillis) {}

    AfterRestart afterRestart(long nanos) {
      int retaken = 0;
      int newer = 0;
      long firstEnd = Long.MAX_VALUE;
      long lastStart = Long.MIN_VALUE;
      for (List<TermChecker.Event> es : byKey.values()) {
        TermChecker.Token before = null;
        TermChecker.Token after = null;
        for (TermChecker.Event ev : es) { // sorted by time
          if (ev.nanos() >= nanos && ev.kind().equals("LOST")) {
            firstEnd = Math.min(firstEnd, ev.nanos() - nanos);
          }
          if (!ev.kind().equals("ACQUIRED")) {
            continue;
          }
          TermChecker.Token t = TermChecker.token(ev.fields().get(1));
          if (ev.nanos() < nanos) {
            before = t;
          } else {
            lastStart = Math.max(lastStart, ev.nanos() - nanos);
            if (after == null) {
              after = t;
            }
          }
        }
        if (after != null) {
          retaken++;
          if (before == null || after.isNewerThan(before)) {
            newer++;
          }
        }
      }
      return new AfterRestart(
          retaken,
          newer,
          firstEnd == Long.MAX_VALUE ? -1 : firstEnd / 1_000_000,
          lastStart == Long.MIN_VALUE ? -1 : lastStart / 1_000_000);
    }
  }

  /**
   * Checks every key's timeline with {@link TermChecker} and gives each result the terms started
   * and the violations found in its window. The killed member's terms, and every term live when the
   * server restarted, count as freed by a server-side fault (the overlap the checker then allows is
   * an effect after the fault, which these tasks do not have; a check after a newer term started is
   * a violation whatever freed the lock).
   */
  private List<Result> check(
      List<Result> results, List<Member> all, String victimId, long restartNanos)
      throws IOException {
    Timelines t = new Timelines();
    for (Member m : all) {
      t.read(m);
    }
    for (List<TermChecker.Event> es : t.byKey.values()) {
      es.sort(Comparator.comparingLong(TermChecker.Event::nanos));
    }
    Set<String> liveAtRestart = restartNanos < 0 ? Set.of() : t.liveAt(restartNanos);
    Set<String> killed = victimId == null ? Set.of() : Set.of(victimId);
    List<TermChecker.Violation> violations =
        TermChecker.analyseEach(
            t.byKey,
            killed,
            (key, acquired) ->
                killed.contains(acquired.member())
                    || liveAtRestart.contains(
                        key + "|" + acquired.member() + "#" + acquired.fields().get(0)));
    int[] terms = new int[results.size()];
    int[] found = new int[results.size()];
    for (List<TermChecker.Event> es : t.byKey.values()) {
      for (TermChecker.Event ev : es) {
        if (ev.kind().equals("ACQUIRED")) {
          terms[window(results, ev.nanos())]++;
        }
      }
    }
    for (TermChecker.Violation v : violations) {
      found[window(results, v.nanos())]++;
    }
    if (!violations.isEmpty()) {
      Path file = out.resolve("group-violations-" + results.get(0).members() + ".txt");
      Files.write(
          file,
          violations.stream().limit(1_000).map(TermChecker.Violation::text).toList(),
          StandardCharsets.UTF_8);
      Progress.log("group: %d violations, the first 1,000 in %s", violations.size(), file);
    }
    List<Result> checked = new ArrayList<>();
    for (int i = 0; i < results.size(); i++) {
      Result r = results.get(i);
      String more = "";
      if (r.startNanos() == restartNanos) {
        Timelines.AfterRestart a = t.afterRestart(restartNanos);
        more =
            String.format(
                Locale.ROOT,
                "%,d of %,d keys taken again, %,d of them with a newer fencing token; in the"
                    + " members' events the first term ended %d ms and the last new term started"
                    + " %d ms after the restart began",
                a.retaken(),
                t.byKey.size(),
                a.newer(),
                a.firstEndMillis(),
                a.lastStartMillis());
      }
      if (i == 0 && t.unreadable > 0) {
        more = t.unreadable + " event lines cut short (by the kill -9) not read";
      }
      checked.add(r.checked(terms[i], found[i], more));
    }
    return checked;
  }

  /** The index of the scenario whose window holds the moment: the last one started by then. */
  private static int window(List<Result> results, long nanos) {
    int i = 0;
    while (i + 1 < results.size() && nanos - results.get(i + 1).startNanos() >= 0) {
      i++;
    }
    return i;
  }

  private ServerState state(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'")) {
      rs.next();
      return new ServerState(ServerProbe.serverMemory(env.postmasterPid()), rs.getInt(1));
    }
  }

  private ServerState state() throws SQLException {
    try (Connection c = env.connect()) {
      return state(c);
    }
  }

  private Rest measure(ServerState idle) throws SQLException, InterruptedException {
    try (Connection c = env.connect()) {
      ServerProbe.Load load =
          ServerProbe.load(
              env,
              c,
              window,
              "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE"
                  + " 'retsu-lock:g%'");
      return new Rest(
          load.statementsPerSecond(), load.cpuPercent(), load.connections(), state(c), idle);
    }
  }

  /** Writes {@code group-results.md}: the figures, the commit, the machine and its load. */
  static void write(Path out, String server, List<Result> results, String loadBefore)
      throws IOException {
    StringBuilder md = new StringBuilder("# LeaderGroup benchmark\n\n");
    md.append("- written ").append(Instant.now().truncatedTo(ChronoUnit.SECONDS)).append('\n');
    md.append("- commit ").append(commit()).append('\n');
    md.append("- machine: ")
        .append(System.getProperty("os.name"))
        .append(' ')
        .append(System.getProperty("os.arch"))
        .append(", ")
        .append(Runtime.getRuntime().availableProcessors())
        .append(" cores; load average before ")
        .append(loadBefore)
        .append(", after ")
        .append(loadAverage())
        .append('\n');
    md.append("- server: ").append(server).append('\n');
    md.append(
        "- members: one JVM each, default settings (4 sessions, membership every 2 s, refresh"
            + " 15 s, heartbeat 2 s), a task that passes ensureLeader() and logs it; times from the"
            + " parent's monotonic clock, counts from what each member printed (checked every 20"
            + " ms)\n");
    md.append(
        "- server memory: Pss summed over the postmaster and all its children"
            + " (/proc/<pid>/smaps_rollup), at the end of the at-rest window and on the idle"
            + " server before the members started; both with the harness's one probe session"
            + " connected\n");
    md.append(
        "- two acting owners: every key's timeline (term start, passed ensureLeader(), term end,"
            + " stamped on the machine's CLOCK_MONOTONIC by the members) through the fault suite's"
            + " TermChecker; a scenario's count covers the events from its start to the next"
            + " scenario's, the last one includes the members' graceful close\n\n");
    md.append(
        "| keys | members | scenario | all owned (ms) | balanced (ms) | sessions per member |"
            + " statements/s at rest | server CPU at rest (% of a core) |"
            + " server memory at rest, MiB Pss (idle server) |"
            + " server processes / client backends at rest (idle) |"
            + " terms started | two acting owners (TermChecker violations) | note |\n");
    md.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (Result r : results) {
      Rest rest = r.rest();
      md.append(
          String.format(
              Locale.ROOT,
              "| %d | %d | %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s |%n",
              r.keys(),
              r.members(),
              r.scenario(),
              r.ownedMillis() < 0 ? "-" : Long.toString(r.ownedMillis()),
              r.balancedMillis() < 0 ? "-" : Long.toString(r.balancedMillis()),
              r.sessions(),
              rest == null || rest.statementsPerSecond() < 0
                  ? "-"
                  : String.format(Locale.ROOT, "%.1f", rest.statementsPerSecond()),
              rest == null || rest.cpuPercent() < 0
                  ? "-"
                  : String.format(Locale.ROOT, "%.1f", rest.cpuPercent()),
              rest == null || rest.state().memory() == null || rest.idle().memory() == null
                  ? "-"
                  : String.format(
                      Locale.ROOT,
                      "%.1f (%.1f)",
                      rest.state().memory().mib(),
                      rest.idle().memory().mib()),
              rest == null || rest.state().memory() == null || rest.idle().memory() == null
                  ? "-"
                  : String.format(
                      Locale.ROOT,
                      "%d / %d (%d / %d)",
                      rest.state().memory().processes(),
                      rest.state().clientBackends(),
                      rest.idle().memory().processes(),
                      rest.idle().clientBackends()),
              r.terms() < 0 ? "-" : Integer.toString(r.terms()),
              r.violations() < 0 ? "-" : Integer.toString(r.violations()),
              r.note()));
    }
    Files.writeString(out.resolve("group-results.md"), md);
  }

  static String loadAverage() {
    try {
      String[] p = Files.readString(Path.of("/proc/loadavg")).split(" ");
      return p[0] + " " + p[1] + " " + p[2];
    } catch (IOException | RuntimeException e) {
      return "unknown";
    }
  }

  /**
   * The commit the run was built from: the system property {@code retsu.bench.commit} when set (so
   * a copied jar can name it), else {@code git describe} of the working directory, with "-dirty"
   * for local changes; "unknown" outside git.
   */
  static String commit() {
    String given = System.getProperty("retsu.bench.commit");
    if (given != null && !given.isBlank()) {
      return given;
    }
    try {
      Process p =
          new ProcessBuilder("git", "describe", "--always", "--dirty", "--abbrev=12")
              .redirectErrorStream(true)
              .start();
      String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      return p.waitFor() == 0 && !text.isEmpty() ? text : "unknown";
    } catch (IOException e) {
      return "unknown";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "unknown";
    }
  }
}
