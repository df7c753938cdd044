package dev.retsu.lock.examples.quarkus;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.testing.ChildJvm;
import dev.retsu.lock.testing.TestDatabase;
import dev.retsu.lock.testing.TestPostgres;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * The example application as it ships ({@code target/quarkus-app/quarkus-run.jar}), two instances
 * as separate processes on one database: one leads and runs the job, the other is a ready standby;
 * after SIGTERM and after kill -9 of the leader the other takes over, and no run of the new leader
 * starts before the old leader's last one ended. Slow (four application starts): {@code
 * -Pquarkus-it}.
 */
@EnabledIfSystemProperty(named = "retsu.quarkus.it", matches = "true")
class TwoInstancesIntegrationTest {

  private static final Path APP = Path.of("target/quarkus-app/quarkus-run.jar");
  private static TestDatabase db;

  /** One instance of the example application. */
  static final class Instance extends ChildJvm {
    final String candidate;
    final int port;

    Instance(String candidate, int port) {
      super(candidate, command(candidate, port));
      this.candidate = candidate;
      this.port = port;
    }

    private static ProcessBuilder command(String candidate, int port) {
      ProcessBuilder b =
          new ProcessBuilder(
              Path.of(System.getProperty("java.home"), "bin", "java").toString(),
              "-Xmx128m",
              "-Dretsu.lock.candidate-id=" + candidate,
              "-Dretsu.lock.leaders.report.retry-interval=300ms",
              "-Dretsu.lock.leaders.report.refresh-interval=1s",
              "-Dreport.every=0.2s",
              "-Dtenants.every=0.2s",
              "-Dretsu.lock.groups.tenants.membership-interval=300ms",
              "-jar",
              APP.toString());
      Map<String, String> env = b.environment();
      env.put("REPORT_JDBC_URL", db.jdbcUrl());
      env.put("REPORT_JDBC_USER", db.user());
      env.put("REPORT_JDBC_PASSWORD", db.password() == null ? "" : db.password());
      env.put("REPORT_HTTP_PORT", Integer.toString(port));
      return b;
    }

    String readiness() {
      try {
        HttpResponse<String> r =
            HttpClient.newHttpClient()
                .send(
                    HttpRequest.newBuilder(
                            URI.create("http://127.0.0.1:" + port + "/q/health/ready"))
                        .timeout(Duration.ofSeconds(5))
                        .build(),
                    HttpResponse.BodyHandlers.ofString());
        return r.statusCode() + " " + r.body();
      } catch (Exception e) {
        return "unreachable: " + e;
      }
    }
  }

  @BeforeAll
  static void database() throws SQLException {
    assertThat(APP).as("the packaged example; run `package` first").exists();
    db = TestDatabase.create(TestPostgres.shared(), "quarkus_two_instances");
    db.execute("CREATE TABLE report_run (candidate text NOT NULL, ran_at timestamptz NOT NULL)");
    db.execute(
        "CREATE TABLE tenant_run (tenant text NOT NULL, candidate text NOT NULL,"
            + " ran_at timestamptz NOT NULL)");
  }

  @AfterAll
  static void dropIt() {
    if (db != null) {
      db.close();
    }
  }

  @Test
  void oneLeadsTheOtherTakesOverAfterSigtermAndAfterKillNineWithoutOverlappingRuns()
      throws Exception {
    try (Instance a = new Instance("a", ChildJvm.freePort());
        Instance b = new Instance("b", ChildJvm.freePort())) {
      await().atMost(Duration.ofSeconds(60)).until(() -> runs("a") + runs("b") >= 3);
      Instance leader = runs("a") > 0 ? a : b;
      Instance standby = leader == a ? b : a;
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> standby.readiness().contains("held-elsewhere"));
      assertThat(standby.readiness()).startsWith("200 ");
      assertThat(runs(standby.candidate)).as("runs on the standby").isZero();
      // the group spreads its two tenants, one per instance
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> tenantRuns("eu", "a") + tenantRuns("us", "a") > 0);
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> tenantRuns("eu", "b") + tenantRuns("us", "b") > 0);

      leader.sigterm();
      await().atMost(Duration.ofSeconds(60)).until(() -> runs(standby.candidate) >= 3);
      assertThat(leader.process.waitFor(60, TimeUnit.SECONDS)).as("stopped after SIGTERM").isTrue();
      assertThat(leader.process.exitValue()).as("exit code after SIGTERM").isIn(0, 143);
      assertThat(leader.logged("Leader loop stopped")).as("a graceful stop").isTrue();
      assertNoOverlap(leader.candidate, standby.candidate);

      try (Instance c = new Instance("c", ChildJvm.freePort())) {
        await()
            .atMost(Duration.ofSeconds(60))
            .until(() -> c.readiness().contains("held-elsewhere"));
        standby.process.destroyForcibly(); // kill -9 of the current leader
        await().atMost(Duration.ofSeconds(60)).until(() -> runs("c") >= 3);
        assertNoOverlap(standby.candidate, "c");
        int eu = tenantRuns("eu", "c");
        int us = tenantRuns("us", "c");
        await()
            .atMost(Duration.ofSeconds(60))
            .until(() -> tenantRuns("eu", "c") > eu && tenantRuns("us", "c") > us);
      }
      assertTenantsNeverInterleave();
    }
  }

  private static int runs(String candidate) throws SQLException {
    return db.queryInts("SELECT count(*)::int FROM report_run WHERE candidate = ?", candidate)
        .get(0);
  }

  private static int tenantRuns(String tenant, String candidate) throws SQLException {
    return db.queryInts(
            "SELECT count(*)::int FROM tenant_run WHERE tenant = ? AND candidate = ?",
            tenant,
            candidate)
        .get(0);
  }

  /**
   * Per tenant, each instance's runs form one unbroken stretch in time: a key moves on (a
   * rebalance, a stop, a kill) and never back in this test, so a run of an earlier owner between
   * two runs of a later one would be two owners at once.
   */
  private static void assertTenantsNeverInterleave() throws SQLException {
    List<Integer> extra =
        db.queryInts(
            "SELECT (count(*) FILTER (WHERE changed) - (count(DISTINCT candidate) - 1))::int"
                + " FROM (SELECT tenant, candidate, candidate IS DISTINCT FROM lag(candidate)"
                + " OVER (PARTITION BY tenant ORDER BY ran_at) AND lag(candidate) OVER"
                + " (PARTITION BY tenant ORDER BY ran_at) IS NOT NULL AS changed FROM tenant_run)"
                + " t GROUP BY tenant ORDER BY tenant");
    assertThat(extra)
        .as("changes of owner beyond one per owner, per tenant (eu, us)")
        .containsExactly(0, 0);
  }

  /** Every run of the old leader ended before the first run of the new one. */
  private static void assertNoOverlap(String old, String successor) throws SQLException {
    List<Integer> overlap =
        db.queryInts(
            "SELECT count(*)::int FROM report_run o, report_run n WHERE o.candidate = ? AND"
                + " n.candidate = ? AND o.ran_at >= n.ran_at",
            old,
            successor);
    assertThat(overlap)
        .as("runs of %s at or after the first run of %s", old, successor)
        .containsExactly(0);
  }
}
