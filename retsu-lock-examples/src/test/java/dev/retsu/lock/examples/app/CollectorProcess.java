package dev.retsu.lock.examples.app;

import dev.retsu.lock.examples.http.ManagementServer;
import dev.retsu.lock.testing.ProcessOutput;
import dev.retsu.lock.testing.TestDatabase;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * A collector in its own JVM, launched from the test class path, with its output captured. The
 * child exits by itself if this JVM dies ({@code RETSU_EXAMPLES__PARENT_PID}); {@link #close()}
 * kills it for sure.
 */
final class CollectorProcess implements AutoCloseable {

  final String name;
  final int port;
  final Process process;
  private final List<String> lines = new CopyOnWriteArrayList<>();
  private final Thread reader;

  private CollectorProcess(String name, int port, Process process) {
    this.name = name;
    this.port = port;
    this.process = process;
    this.reader =
        ProcessOutput.follow(
            process,
            "retsu-lock-examples-test-" + name,
            line -> {
              System.out.println("[" + name + "] " + line);
              lines.add(line);
            });
  }

  static CollectorProcess start(TestDatabase db, String name, String interval) {
    return start(db, name, interval, freePort(), Map.of());
  }

  /** Starts a collector; {@code overrides} replace the environment derived from {@code db}. */
  static CollectorProcess start(
      TestDatabase db, String name, String interval, int port, Map<String, String> overrides) {
    ProcessBuilder pb =
        new ProcessBuilder(
            Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "-Xmx128m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-cp",
            System.getProperty("java.class.path"),
            Main.class.getName(),
            "collector");
    Map<String, String> env = pb.environment();
    env.put("RETSU_DATABASE__URL", db.jdbcUrl());
    env.put("RETSU_DATABASE__USER", db.user());
    if (!db.password().isEmpty()) {
      env.put("RETSU_DATABASE__PASSWORD", db.password());
    }
    env.put("RETSU_DATABASE__POOL_SIZE", "4");
    env.put("RETSU_WORKER__MANAGEMENT__PORT", Integer.toString(port));
    env.put("RETSU_WORKER__MANAGEMENT__ADDRESS", "127.0.0.1");
    env.put("RETSU_WORKER__STATE_COLLECTOR__INTERVAL", interval);
    env.put("RETSU_WORKER__STATE_COLLECTOR__CANDIDATE_ID", name);
    env.put("RETSU_EXAMPLES__PARENT_PID", Long.toString(ProcessHandle.current().pid()));
    env.putAll(overrides);
    pb.redirectErrorStream(true);
    try {
      return new CollectorProcess(name, port, pb.start());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static int freePort() {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Counts output lines that end with the given text. */
  long linesEndingWith(String text) {
    return lines.stream().filter(l -> l.endsWith(text)).count();
  }

  boolean logged(String fragment) {
    return lines.stream().anyMatch(l -> l.contains(fragment));
  }

  boolean isLeaderByLog() {
    return linesEndingWith(CollectorCommand.ACQUIRED_LINE) > 0;
  }

  /**
   * Returns whether the process has exited and all its output has been read, so that assertions on
   * its last lines do not race with the reader.
   */
  boolean exitedAndDrained() {
    if (process.isAlive()) {
      return false;
    }
    try {
      reader.join(100);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return !reader.isAlive();
  }

  String get(String path) {
    return ManagementServer.fetch(port, path);
  }

  String metrics() {
    String m = get("/metrics");
    return m == null ? "" : m;
  }

  String output() {
    return String.join("\n", lines);
  }

  @Override
  public void close() {
    if (process.isAlive()) {
      process.destroyForcibly();
    }
    try {
      process.waitFor(20, TimeUnit.SECONDS);
      reader.join(2000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public String toString() {
    return name + " :" + port;
  }
}
