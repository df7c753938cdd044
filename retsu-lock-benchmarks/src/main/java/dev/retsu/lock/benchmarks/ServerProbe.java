package dev.retsu.lock.benchmarks;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads what the server spends: statements from {@code pg_stat_statements}, CPU from {@code /proc}
 * (the postmaster, its live children, and the children it has reaped) and memory from {@code
 * /proc/<pid>/smaps_rollup} (the postmaster and its live children).
 */
final class ServerProbe {

  private static final long TICKS_PER_SECOND = 100; // USER_HZ on Linux

  private ServerProbe() {}

  /**
   * What the server spent over one window at rest.
   *
   * @param statementsPerSecond pg_stat_statements calls per second, -1 without the extension
   * @param cpuPercent server CPU in % of one core, -1 when the server is not a local process
   * @param connections the count {@code connectionsSql} gave at the end of the window
   */
  record Load(double statementsPerSecond, double cpuPercent, int connections) {}

  /**
   * Measures statements/s and server CPU over {@code window} on {@code c}, then counts connections
   * with {@code connectionsSql} (a {@code SELECT count(*)}).
   */
  static Load load(BenchEnv env, Connection c, Duration window, String connectionsSql)
      throws SQLException, InterruptedException {
    long calls0 = env.statementsExtension ? statementCalls(c) : 0;
    double cpu0 = serverCpuSeconds(env.postmasterPid());
    long t0 = System.nanoTime();
    Thread.sleep(window.toMillis()); // the window itself: the server is measured, not awaited
    long calls1 = env.statementsExtension ? statementCalls(c) : 0;
    double cpu1 = serverCpuSeconds(env.postmasterPid());
    double seconds = (System.nanoTime() - t0) / 1e9;
    int connections;
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(connectionsSql)) {
      rs.next();
      connections = rs.getInt(1);
    }
    return new Load(
        env.statementsExtension ? (calls1 - calls0) / seconds : -1,
        cpu0 < 0 || cpu1 < 0 ? -1 : 100 * (cpu1 - cpu0) / seconds,
        connections);
  }

  static void resetStatements(Connection c) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute("SELECT pg_stat_statements_reset()");
    }
  }

  /** Calls recorded by pg_stat_statements in the benchmark database, except our own probes. */
  static long statementCalls(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements"
                    + " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
                    + " AND query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE '%pg_stat_activity%'")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /**
   * Returns CPU seconds used so far by the postmaster and all its children, or -1 when the server
   * is not a local process.
   */
  static double serverCpuSeconds(long postmasterPid) {
    long[] pm =
        postmasterPid > 0 ? stat(Path.of("/proc", Long.toString(postmasterPid), "stat")) : null;
    if (pm == null) {
      return -1;
    }
    long ticks = pm[1] + pm[2] + pm[3] + pm[4];
    try {
      for (Path child : children(postmasterPid)) {
        long[] st = stat(child.resolve("stat"));
        if (st != null) {
          ticks += st[1] + st[2];
        }
      }
    } catch (IOException e) {
      return -1;
    }
    return ticks / (double) TICKS_PER_SECOND;
  }

  /**
   * The server's memory: proportional set size (Pss) summed over the postmaster and all its
   * children, and how many processes that is.
   *
   * @param pssBytes the sum of Pss: private pages in full, each shared page (shared_buffers, the
   *     lock table, the binary) split among the processes that map it, so a page the server's
   *     processes share counts once in the sum
   * @param processes the postmaster and its children
   */
  record Memory(long pssBytes, int processes) {

    double mib() {
      return pssBytes / (1024.0 * 1024.0);
    }
  }

  /**
   * Reads the server's memory from {@code /proc/<pid>/smaps_rollup}; null when the server is not a
   * local process or the file cannot be read (Linux 4.14+, as root or as the server's user).
   */
  static Memory serverMemory(long postmasterPid) {
    if (postmasterPid <= 0) {
      return null;
    }
    Path pm = Path.of("/proc", Long.toString(postmasterPid));
    try {
      long pss = pss(pm);
      int processes = 1;
      for (Path child : children(postmasterPid)) {
        try {
          pss += pss(child);
          processes++;
        } catch (IOException e) {
          // the child exited between the listing and the read: it holds no memory now
        }
      }
      return new Memory(pss, processes);
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }

  private static long pss(Path proc) throws IOException {
    for (String line : Files.readAllLines(proc.resolve("smaps_rollup"))) {
      if (line.startsWith("Pss:")) {
        return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
      }
    }
    throw new IOException("no Pss line in " + proc.resolve("smaps_rollup"));
  }

  /** The /proc directories of the live children of a process. */
  private static List<Path> children(long parentPid) throws IOException {
    List<Path> out = new ArrayList<>();
    try (DirectoryStream<Path> procs = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
      for (Path p : procs) {
        long[] st = stat(p.resolve("stat"));
        if (st != null && st[0] == parentPid) {
          out.add(p);
        }
      }
    }
    return out;
  }

  /** Returns {ppid, utime, stime, cutime, cstime} from a /proc/PID/stat file, or null. */
  private static long[] stat(Path file) {
    try {
      String s = Files.readString(file);
      String rest = s.substring(s.lastIndexOf(')') + 2);
      String[] f = rest.split(" ");
      // after "pid (comm) ": state=0 ppid=1 ... utime=11 stime=12 cutime=13 cstime=14
      return new long[] {
        Long.parseLong(f[1]),
        Long.parseLong(f[11]),
        Long.parseLong(f[12]),
        Long.parseLong(f[13]),
        Long.parseLong(f[14])
      };
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }

  /** MemAvailable in bytes, or Long.MAX_VALUE when unknown. */
  static long memAvailable() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
        if (line.startsWith("MemAvailable:")) {
          return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
        }
      }
    } catch (IOException | RuntimeException e) {
      // unknown
    }
    return Long.MAX_VALUE;
  }
}
