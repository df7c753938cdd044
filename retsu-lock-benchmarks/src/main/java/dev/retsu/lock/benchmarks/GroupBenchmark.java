package dev.retsu.lock.benchmarks;

import dev.retsu.lock.LeaderGroup;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
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
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.BooleanSupplier;

/**
 * Many keys per process: {@code keys} keys shared by {@code members} {@link LeaderGroup} members,
 * each in its own JVM ({@link GroupMemberMain}), with default settings (4 sessions, membership
 * every 2 s). Measures the sessions used, the time until every key is owned and the group balanced
 * after a cold start, after one member is killed with SIGKILL, and after a member joins; and the
 * server's cost at rest. Writes {@code group-results.md} naming the commit, the machine and its
 * load average.
 */
final class GroupBenchmark {

  /** One measured scenario. */
  record Result(
      int keys,
      int members,
      String scenario,
      long ownedMillis,
      long balancedMillis,
      int sessions,
      double statementsPerSecond,
      double serverCpuPercent,
      String note) {}

  private final BenchEnv env;
  private final Path out;
  private final Duration window;
  private final Duration limit = Duration.ofSeconds(120);

  GroupBenchmark(BenchEnv env, Path out, Duration window) {
    this.env = env;
    this.out = out;
    this.window = window;
  }

  /** One member JVM and what it printed last. */
  private static final class Member {
    final String id;
    final Process process;
    volatile long startedMicros = -1;
    volatile int held;
    volatile int sessions;

    Member(String id, Process process) {
      this.id = id;
      this.process = process;
      Thread reader = new Thread(this::read, "retsu-lock-bench-group-reader-" + id);
      reader.setDaemon(true);
      reader.start();
    }

    private void read() {
      try (BufferedReader r =
          new BufferedReader(
              new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
        String line;
        while ((line = r.readLine()) != null) {
          String[] p = line.split(" ");
          if (p[0].equals("STARTED")) {
            startedMicros = Long.parseLong(p[1]);
          } else if (p[0].equals("HELD") && p.length >= 4) {
            held = Integer.parseInt(p[2]);
            sessions = Integer.parseInt(p[3]);
          }
        }
      } catch (IOException | RuntimeException e) {
        // the process is gone; alive() says so
      }
    }

    boolean alive() {
      return process.isAlive();
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
    ProcessBuilder pb = new ProcessBuilder(command);
    pb.redirectError(
        ProcessBuilder.Redirect.appendTo(out.resolve("group-" + id + ".log").toFile()));
    return new Member(id, pb.start());
  }

  private static boolean owned(List<Member> live, int keys) {
    int sum = 0;
    for (Member m : live) {
      sum += m.held;
    }
    return sum == keys;
  }

  private static boolean balanced(List<Member> live, int keys) {
    int quota = (keys + live.size() - 1) / live.size();
    return owned(live, keys) && live.stream().allMatch(m -> m.held <= quota);
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
   * Runs the scenarios for one member count.
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
    try {
      Progress.log("group: %d keys over %d members, cold start", keys, members);
      long t0 = System.nanoTime();
      for (int i = 0; i < members; i++) {
        Member m = launch(group, keys, "g" + members + "-m" + i, sessions);
        live.add(m);
        all.add(m);
      }
      long owned = until(t0, () -> owned(live, keys));
      long balanced = until(t0, () -> balanced(live, keys));
      int used = live.stream().mapToInt(m -> m.sessions).max().orElse(0);
      Thread.sleep(3_000); // past the first membership rounds
      Measured rest = measure(group);
      results.add(
          new Result(
              keys,
              members,
              "cold start (from launching the JVMs) and at rest",
              owned,
              balanced,
              used,
              rest.statementsPerSecond,
              rest.cpuPercent,
              rest.connections + " group sessions on the server"));

      Progress.log("group: kill -9 of one of %d members", members);
      Member victim = live.remove(0);
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
              live.stream().mapToInt(m -> m.sessions).max().orElse(0),
              -1,
              -1,
              ""));

      Progress.log("group: a member joins %d members", live.size());
      Member joiner = launch(group, keys, "g" + members + "-join", sessions);
      all.add(joiner);
      live.add(joiner);
      long launched = System.nanoTime();
      long started = until(launched, () -> joiner.startedMicros > 0);
      long j0 = System.nanoTime();
      balanced = until(j0, () -> balanced(live, keys) && joiner.held > 0);
      results.add(
          new Result(
              keys,
              members,
              "a member joins (from its start() returning; JVM start took " + started + " ms)",
              -1,
              balanced,
              joiner.sessions,
              -1,
              -1,
              "joiner holds " + joiner.held));
    } finally {
      for (Member m : all) {
        m.closeQuietly();
      }
    }
    return results;
  }

  private record Measured(double statementsPerSecond, double cpuPercent, int connections) {}

  private Measured measure(String group) throws SQLException, InterruptedException {
    try (Connection c = env.connect()) {
      long calls0 = env.statementsExtension ? ServerProbe.statementCalls(c) : 0;
      double cpu0 = ServerProbe.serverCpuSeconds(env.postmasterPid());
      long t0 = System.nanoTime();
      Thread.sleep(window.toMillis());
      long calls1 = env.statementsExtension ? ServerProbe.statementCalls(c) : 0;
      double cpu1 = ServerProbe.serverCpuSeconds(env.postmasterPid());
      double seconds = (System.nanoTime() - t0) / 1e9;
      int connections;
      try (Statement s = c.createStatement();
          ResultSet rs =
              s.executeQuery(
                  "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE"
                      + " 'retsu-lock:g%'")) {
        rs.next();
        connections = rs.getInt(1);
      }
      return new Measured(
          env.statementsExtension ? (calls1 - calls0) / seconds : -1,
          cpu0 < 0 || cpu1 < 0 ? -1 : 100 * (cpu1 - cpu0) / seconds,
          connections);
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
            + " 15 s, heartbeat 2 s), a task that does nothing; times from the parent's monotonic"
            + " clock, counts from what each member printed (checked every 20 ms)\n\n");
    md.append(
        "| keys | members | scenario | all owned (ms) | balanced (ms) | sessions per member |"
            + " statements/s at rest | server CPU at rest (% of a core) | note |\n");
    md.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (Result r : results) {
      md.append(
          String.format(
              Locale.ROOT,
              "| %d | %d | %s | %s | %s | %d | %s | %s | %s |%n",
              r.keys(),
              r.members(),
              r.scenario(),
              r.ownedMillis() < 0 ? "-" : Long.toString(r.ownedMillis()),
              r.balancedMillis() < 0 ? "-" : Long.toString(r.balancedMillis()),
              r.sessions(),
              r.statementsPerSecond() < 0
                  ? "-"
                  : String.format(Locale.ROOT, "%.1f", r.statementsPerSecond()),
              r.serverCpuPercent() < 0
                  ? "-"
                  : String.format(Locale.ROOT, "%.1f", r.serverCpuPercent()),
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
