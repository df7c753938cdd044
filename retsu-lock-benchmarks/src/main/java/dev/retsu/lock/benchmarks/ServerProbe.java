package dev.retsu.lock.benchmarks;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * Reads what the server spends: statements from {@code pg_stat_statements} and CPU from {@code
 * /proc} (the postmaster, its live children, and the children it has reaped).
 */
final class ServerProbe {

  private static final long TICKS_PER_SECOND = 100; // USER_HZ on Linux

  private ServerProbe() {}

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
    if (postmasterPid <= 0 || !Files.isDirectory(Path.of("/proc", Long.toString(postmasterPid)))) {
      return -1;
    }
    long ticks = 0;
    long[] pm = stat(Path.of("/proc", Long.toString(postmasterPid), "stat"));
    if (pm == null) {
      return -1;
    }
    ticks += pm[1] + pm[2] + pm[3] + pm[4];
    try (DirectoryStream<Path> procs = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
      for (Path p : procs) {
        long[] st = stat(p.resolve("stat"));
        if (st != null && st[0] == postmasterPid) {
          ticks += st[1] + st[2];
        }
      }
    } catch (IOException e) {
      return -1;
    }
    return ticks / (double) TICKS_PER_SECOND;
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
