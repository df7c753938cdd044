package dev.retsu.lock.examples.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.examples.http.ManagementServer;
import dev.retsu.lock.testing.ChildJvm;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Spring Boot collector as separate JVMs against the real PostgreSQL: one leads, {@code
 * /actuator/health} is UP on both, only the leader's {@code /actuator/prometheus} has the queue
 * gauges, SIGTERM of the leader hands over with no overlapping work (stamped with the database's
 * clock), and {@code pg_terminate_backend} of the leader's session hands over to a WAIT standby.
 */
@ExtendWith(PostgresExtension.class)
class BootCollectorIntegrationTest {

  private static final Pattern BACKEND_PID = Pattern.compile("\"pid\":(\\d+)");

  @Test
  void oneLeadsBothUpGaugesOnTheLeaderOnlyAndBothFailoversHandOverWithoutOverlap(
      TestDatabase db, @TempDir Path tmp) throws Exception {
    List<BootProcess> all = new ArrayList<>();
    try {
      BootProcess a = BootProcess.start(db, tmp, "boot-a", "poll");
      all.add(a);
      await().atMost(Duration.ofSeconds(90)).until(() -> a.role().equals("leader"));
      db.execute("INSERT INTO retsu_queue_message (queue, state) VALUES ('orders', 'ready')");
      BootProcess b = BootProcess.start(db, tmp, "boot-b", "poll");
      all.add(b);
      await().atMost(Duration.ofSeconds(90)).until(() -> b.role().equals("standby"));

      // Both UP; one leader.
      assertThat(a.health()).contains("\"status\":\"UP\"", "\"role\":\"leader\"");
      assertThat(b.health()).contains("\"status\":\"UP\"", "\"role\":\"standby\"");
      // Leader-only gauges on the leader only; leadership metrics on both.
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> a.prometheus().contains("queue_messages_ready{queue=\"orders\"} 1.0"));
      assertThat(b.prometheus()).doesNotContain("queue_messages_ready");
      assertThat(a.prometheus())
          .containsPattern("retsu_lock_leader\\{[^}]*state=\"leader\"[^}]*} 1.0");
      assertThat(b.prometheus())
          .containsPattern("retsu_lock_leader\\{[^}]*state=\"standby\"[^}]*} 1.0");
      // The standby's leaders endpoint names the leader's session.
      assertThat(b.get("/actuator/leaders/queue-state")).contains("\"candidate\":\"boot-a\"");
      await().atMost(Duration.ofSeconds(30)).until(() -> stamps(db, "boot-a") >= 2);

      // SIGTERM of the leader: graceful stop, the standby takes over.
      a.process
          .toHandle()
          .destroy(); // SIGTERM; Process.destroy() would close our end of its output
      assertThat(a.process.waitFor(60, TimeUnit.SECONDS)).isTrue();
      await()
          .atMost(Duration.ofSeconds(10))
          .until(() -> a.exitedAndDrained() && a.logged("Leadership released (CLOSED)"));
      await().atMost(Duration.ofSeconds(30)).until(() -> b.role().equals("leader"));
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> b.prometheus().contains("queue_messages_ready{queue=\"orders\"} 1.0"));
      await().atMost(Duration.ofSeconds(30)).until(() -> stamps(db, "boot-b") >= 2);

      // pg_terminate_backend of the leader's session: a WAIT standby takes over at once.
      BootProcess c = BootProcess.start(db, tmp, "boot-c", "wait");
      all.add(c);
      await().atMost(Duration.ofSeconds(90)).until(() -> c.role().equals("standby"));
      int pid = leaderPid(b);
      assertThat(db.terminateBackend(pid)).isTrue();
      await().atMost(Duration.ofSeconds(30)).until(() -> c.role().equals("leader"));
      await().atMost(Duration.ofSeconds(30)).until(() -> stamps(db, "boot-c") >= 2);
      assertThat(b.logged("Leadership lost (SESSION_LOST)")).isTrue();
      assertThat(b.health()).contains("\"status\":\"UP\"", "\"role\":\"standby\"");

      // No two instances ever did leader work at the same time (one clock: the database's).
      assertThat(
              db.queryInts(
                  "SELECT count(*)::int FROM retsu_boot_work x JOIN retsu_boot_work y"
                      + " ON x.candidate <> y.candidate"
                      + " AND tstzrange(x.started, x.finished) && tstzrange(y.started, y.finished)"))
          .containsExactly(0);
    } finally {
      for (BootProcess p : all) {
        p.close();
      }
    }
  }

  private static int stamps(TestDatabase db, String candidate) throws Exception {
    return db.queryInts("SELECT count(*)::int FROM retsu_boot_work WHERE candidate = ?", candidate)
        .get(0);
  }

  private static int leaderPid(BootProcess leader) {
    String health = leader.health();
    Matcher m = BACKEND_PID.matcher(health);
    assertThat(m.find()).as(health).isTrue();
    return Integer.parseInt(m.group(1));
  }

  /** One Boot collector JVM, launched from the test class path. */
  static final class BootProcess extends ChildJvm {
    final int port;

    private BootProcess(String name, int port, ProcessBuilder builder) {
      super(name, builder);
      this.port = port;
    }

    /**
     * Starts one collector. Its temporary directory is {@code tmp}: embedded Tomcat's work folders
     * ({@code tomcat.*}, {@code tomcat-docbase.*}) are deleted only on a normal exit, and most of
     * these JVMs end killed.
     */
    static BootProcess start(TestDatabase db, Path tmp, String name, String takeover) {
      return start(db, tmp, name, takeover, List.of());
    }

    /** Starts one collector with more JVM options, e.g. {@code -Dspring.aot.enabled=true}. */
    static BootProcess start(
        TestDatabase db, Path tmp, String name, String takeover, List<String> jvmOptions) {
      int port = freePort();
      List<String> options = new ArrayList<>();
      options.addAll(
          List.of(
              "-Xmx192m",
              "-XX:+UseSerialGC",
              "-XX:TieredStopAtLevel=1",
              "-Djava.io.tmpdir=" + tmp));
      options.addAll(jvmOptions);
      ProcessBuilder pb =
          new ProcessBuilder(
              javaCommand(
                  options,
                  BootCollectorApplication.class,
                  List.of(
                      "--server.port=" + port,
                      "--server.address=127.0.0.1",
                      "--spring.datasource.url=" + db.jdbcUrl(),
                      "--spring.datasource.username=" + db.user(),
                      "--spring.datasource.password=" + db.password(),
                      "--retsu.lock.candidate-id=" + name,
                      "--retsu.lock.leaders.queue-state.refresh-interval=500ms",
                      "--retsu.lock.leaders.queue-state.retry-interval=500ms",
                      "--retsu.lock.leaders.queue-state.takeover=" + takeover,
                      "--examples.boot.work-interval=50ms",
                      "--spring.main.banner-mode=off")));
      pb.environment()
          .put("RETSU_EXAMPLES__PARENT_PID", Long.toString(ProcessHandle.current().pid()));
      return new BootProcess(name, port, pb);
    }

    String get(String path) {
      String body = ManagementServer.fetch(port, path);
      return body == null ? "" : body;
    }

    String health() {
      return get("/actuator/health");
    }

    String prometheus() {
      return get("/actuator/prometheus");
    }

    /** The role the health indicator reports, or "" while the JVM is not serving. */
    String role() {
      Matcher m = Pattern.compile("\"role\":\"([a-z-]+)\"").matcher(health());
      return m.find() ? m.group(1) : "";
    }
  }
}
