package dev.retsu.lock.examples.app;

import dev.retsu.lock.examples.http.ManagementServer;
import dev.retsu.lock.testing.ChildJvm;
import dev.retsu.lock.testing.TestDatabase;
import java.util.List;
import java.util.Map;

/**
 * A collector in its own JVM, launched from the test class path, with its output captured. The
 * child exits by itself if this JVM dies ({@code RETSU_EXAMPLES__PARENT_PID}); {@link #close()}
 * kills it for sure.
 */
final class CollectorProcess extends ChildJvm {

  final int port;

  private CollectorProcess(String name, int port, ProcessBuilder builder) {
    super(name, builder);
    this.port = port;
  }

  static CollectorProcess start(TestDatabase db, String name, String interval) {
    return start(db, name, interval, freePort(), Map.of());
  }

  /** Starts a collector; {@code overrides} replace the environment derived from {@code db}. */
  static CollectorProcess start(
      TestDatabase db, String name, String interval, int port, Map<String, String> overrides) {
    ProcessBuilder pb =
        new ProcessBuilder(
            javaCommand(
                List.of("-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"),
                Main.class,
                List.of("collector")));
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
    return new CollectorProcess(name, port, pb);
  }

  /** Counts output lines that end with the given text. */
  long linesEndingWith(String text) {
    return lines().stream().filter(l -> l.endsWith(text)).count();
  }

  boolean isLeaderByLog() {
    return linesEndingWith(CollectorCommand.ACQUIRED_LINE) > 0;
  }

  String get(String path) {
    return ManagementServer.fetch(port, path);
  }

  String metrics() {
    String m = get("/metrics");
    return m == null ? "" : m;
  }

  String output() {
    return String.join("\n", lines());
  }

  @Override
  public String toString() {
    return name + " :" + port;
  }
}
