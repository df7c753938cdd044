package dev.retsu.lock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.spring.boot.testapp.TwoInstanceApplication;
import dev.retsu.lock.testing.ChildJvm;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two instances of one application, on each Spring Boot line: {@link TwoInstanceApplication} as
 * separate JVMs against the real PostgreSQL. One leads; {@code /actuator/health} is UP on both; the
 * leader-only gauge and the job's runs are on the leader's {@code /actuator/prometheus} only;
 * SIGTERM of the leader hands over; {@code pg_terminate_backend} of the leader's session hands over
 * to a WAIT standby; no two instances ever worked at once (stamped with the database's clock).
 */
@ExtendWith(PostgresExtension.class)
public abstract class AbstractTwoInstanceIntegrationTest {

  private static final AtomicLong KEYS = new AtomicLong(9_300_000);
  private static final Pattern BACKEND_PID = Pattern.compile("\"pid\":(\\d+)");
  private static final String JOB_RUNS_ON =
      "retsu_lock_job_runs_total\\{[^}]*job=\"Stamps.stamp\"[^}]*outcome=\"success\"[^}]*} ";

  /** The line under test. */
  protected final TestedBootLine line;

  /**
   * Creates the test for one line.
   *
   * @param line the line
   */
  protected AbstractTwoInstanceIntegrationTest(TestedBootLine line) {
    this.line = line;
  }

  @Test
  void oneLeadsBothUpLeaderOnlyMetricsOnTheLeaderOnlyAndBothFailoversHandOver(
      TestDatabase db, @TempDir Path tmp) throws Exception {
    long key = KEYS.incrementAndGet() + 1000L * line.major();
    db.execute("DROP TABLE IF EXISTS retsu_boot_work");
    List<Instance> all = new ArrayList<>();
    try {
      Instance a = Instance.start(db, "boot-a", "poll", key, tmp);
      all.add(a);
      await().atMost(Duration.ofSeconds(90)).until(() -> a.role().equals("leader"));
      Instance b = Instance.start(db, "boot-b", "poll", key, tmp);
      all.add(b);
      await().atMost(Duration.ofSeconds(90)).until(() -> b.role().equals("standby"));
      // The banner names the Boot version the child JVM really runs: the one the build asked for
      // (-Pspring-boot-4.1 included), of this line.
      String asked = AbstractRetsuLockAutoConfigurationTest.springBootTheBuildAskedFor();
      assertThat(asked).startsWith(line.major() + ".");
      assertThat(a.lines())
          .anySatisfy(l -> assertThat(l).contains(":: Spring Boot ::", "(v" + asked + ")"));

      assertThat(a.health()).contains("\"status\":\"UP\"", "\"role\":\"leader\"");
      assertThat(b.health())
          .contains("\"status\":\"UP\"", "\"role\":\"standby\"", "\"reason\":\"held-elsewhere\"");
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> a.prometheus().contains("queue_messages_ready{queue=\"orders\"} 1.0"));
      assertThat(b.prometheus()).doesNotContain("queue_messages_ready");
      await().atMost(Duration.ofSeconds(30)).until(() -> stamps(db, "boot-a") >= 2);
      String pa = a.prometheus();
      String pb = b.prometheus();
      assertThat(pa).containsPattern("retsu_lock_leader\\{[^}]*state=\"leader\"[^}]*} 1.0");
      assertThat(pb).containsPattern("retsu_lock_leader\\{[^}]*state=\"standby\"[^}]*} 1.0");
      // The job's runs: counted on the leader, registered at zero on the standby.
      assertThat(runs(pa)).isPositive();
      assertThat(runs(pb)).isZero();
      assertThat(b.get("/actuator/leaders/job")).contains("\"candidate\":\"boot-a\"");

      // SIGTERM of the leader: graceful stop, the standby takes over.
      a.process.toHandle().destroy();
      assertThat(a.process.waitFor(60, TimeUnit.SECONDS)).isTrue();
      await()
          .atMost(Duration.ofSeconds(10))
          .until(() -> a.exitedAndDrained() && a.logged("Leadership released (CLOSED)"));
      await().atMost(Duration.ofSeconds(30)).until(() -> b.role().equals("leader"));
      await().atMost(Duration.ofSeconds(30)).until(() -> stamps(db, "boot-b") >= 2);
      await().atMost(Duration.ofSeconds(30)).until(() -> runs(b.prometheus()) > 0);

      // pg_terminate_backend of the leader's session: a WAIT standby takes over.
      Instance c = Instance.start(db, "boot-c", "wait", key, tmp);
      all.add(c);
      await().atMost(Duration.ofSeconds(90)).until(() -> c.role().equals("standby"));
      int pid = leaderPid(b);
      assertThat(db.terminateBackend(pid)).isTrue();
      await().atMost(Duration.ofSeconds(30)).until(() -> c.role().equals("leader"));
      await().atMost(Duration.ofSeconds(30)).until(() -> stamps(db, "boot-c") >= 2);
      assertThat(b.logged("Leadership lost (SESSION_LOST)")).isTrue();
      assertThat(b.health()).contains("\"status\":\"UP\"", "\"role\":\"standby\"");

      // Over HTTP: the standby's health shows the leader's lease from the watch; only the leader
      // yields (409 on the standby, 400 for a bad cooldown), and the standby takes over.
      await()
          .atMost(Duration.ofSeconds(10))
          .until(
              () ->
                  b.health()
                      .matches(
                          "(?s).*\"holder\":\\{\"candidate\":\"boot-c\",[^}]*\"source\":\"watch\".*"));
      assertThat(b.post("/actuator/leaders/job", "{\"cooldown\":\"1s\"}"))
          .startsWith("409 ")
          .contains("(boot-b) does not lead 'job'", "\"candidate\":\"boot-c\"");
      assertThat(c.post("/actuator/leaders/job", "{\"cooldown\":\"later\"}"))
          .startsWith("400 ")
          .contains("but was \\\"later\\\"");
      assertThat(c.post("/actuator/leaders/job", "{\"cooldown\":\"60s\"}"))
          .startsWith("200 ")
          .contains("\"yielded\":true", "\"cooldown\":\"PT1M\"");
      await().atMost(Duration.ofSeconds(30)).until(() -> b.role().equals("leader"));
      assertThat(c.logged("Yielded leadership")).isTrue();

      assertThat(
              db.queryInts(
                  "SELECT count(*)::int FROM retsu_boot_work x JOIN retsu_boot_work y"
                      + " ON x.candidate <> y.candidate"
                      + " AND tstzrange(x.started, x.finished) && tstzrange(y.started, y.finished)"))
          .containsExactly(0);
    } finally {
      for (Instance p : all) {
        p.close();
      }
    }
  }

  private static double runs(String prometheus) {
    Matcher m = Pattern.compile(JOB_RUNS_ON + "([0-9.E]+)").matcher(prometheus);
    return m.find() ? Double.parseDouble(m.group(1)) : -1;
  }

  private static int stamps(TestDatabase db, String candidate) throws Exception {
    return db.queryInts("SELECT count(*)::int FROM retsu_boot_work WHERE candidate = ?", candidate)
        .get(0);
  }

  private static int leaderPid(Instance leader) {
    String health = leader.health();
    Matcher m = BACKEND_PID.matcher(health);
    assertThat(m.find()).as(health).isTrue();
    return Integer.parseInt(m.group(1));
  }

  /** One application JVM, launched from the test class path (this line's Spring Boot). */
  static final class Instance extends ChildJvm {
    final int port;

    private Instance(String name, int port, ProcessBuilder builder) {
      super(name, builder);
      this.port = port;
    }

    /**
     * Starts one application. Its temporary directory is {@code tmp}, which the test removes:
     * embedded Tomcat's work folders would otherwise stay in the machine's temporary directory.
     */
    static Instance start(TestDatabase db, String name, String takeover, long key, Path tmp) {
      int port = freePort();
      ProcessBuilder pb =
          new ProcessBuilder(
              javaCommand(
                  List.of(
                      "-Xmx192m",
                      "-XX:+UseSerialGC",
                      "-XX:TieredStopAtLevel=1",
                      "-Djava.io.tmpdir=" + tmp),
                  TwoInstanceApplication.class,
                  List.of(
                      "--server.port=" + port,
                      "--server.address=127.0.0.1",
                      "--spring.datasource.url=" + db.jdbcUrl(),
                      "--spring.datasource.username=" + db.user(),
                      "--spring.datasource.password=" + db.password(),
                      "--spring.datasource.hikari.maximum-pool-size=4",
                      "--retsu.lock.candidate-id=" + name,
                      "--retsu.lock.leaders.job.key.value=" + key,
                      "--retsu.lock.leaders.job.refresh-interval=500ms",
                      "--retsu.lock.leaders.job.retry-interval=500ms",
                      "--retsu.lock.leaders.job.takeover=" + takeover,
                      "--management.endpoints.web.exposure.include=health,prometheus,leaders",
                      "--management.endpoint.leaders.access=unrestricted",
                      "--retsu.lock.watch.enabled=true",
                      "--management.endpoint.health.show-details=always")));
      pb.environment().put("RETSU_TEST_PARENT_PID", Long.toString(ProcessHandle.current().pid()));
      return new Instance(name, port, pb);
    }

    String get(String path) {
      try {
        HttpURLConnection c =
            (HttpURLConnection)
                URI.create("http://127.0.0.1:" + port + path).toURL().openConnection();
        c.setConnectTimeout(2000);
        c.setReadTimeout(5000);
        try (InputStream in = c.getResponseCode() < 400 ? c.getInputStream() : c.getErrorStream()) {
          return in == null ? "" : new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } finally {
          c.disconnect();
        }
      } catch (IOException e) {
        return ""; // not serving (yet, or any more)
      }
    }

    /** POSTs a JSON body; returns the status code, a space, and the response body. */
    String post(String path, String json) {
      try {
        HttpURLConnection c =
            (HttpURLConnection)
                URI.create("http://127.0.0.1:" + port + path).toURL().openConnection();
        c.setConnectTimeout(2000);
        c.setReadTimeout(15000);
        c.setRequestMethod("POST");
        c.setDoOutput(true);
        c.setRequestProperty("Content-Type", "application/json");
        c.getOutputStream().write(json.getBytes(StandardCharsets.UTF_8));
        int status = c.getResponseCode();
        try (InputStream in = status < 400 ? c.getInputStream() : c.getErrorStream()) {
          return status
              + " "
              + (in == null ? "" : new String(in.readAllBytes(), StandardCharsets.UTF_8));
        } finally {
          c.disconnect();
        }
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }

    String health() {
      return get("/actuator/health");
    }

    String prometheus() {
      return get("/actuator/prometheus");
    }

    String role() {
      Matcher m = Pattern.compile("\"role\":\"([a-z-]+)\"").matcher(health());
      return m.find() ? m.group(1) : "";
    }
  }
}
