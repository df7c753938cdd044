package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.faults.FaultCandidate;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.postgresql.ds.PGSimpleDataSource;

/** Bad input and security: bound parameters, no credentials in output, unprivileged roles. */
@ExtendWith(PostgresExtension.class)
class SecurityIntegrationTest {

  @Test
  void candidateIdsAndSettingValuesAreBoundNeverSpliced(TestDatabase db) throws Exception {
    db.execute("CREATE TABLE canary (id int)");
    String hostile = "x'); DROP TABLE canary; --";
    AdvisoryLock lock =
        AdvisoryLock.builder(db.dataSource(), LockKey.named("ns'; DROP TABLE canary; --", hostile))
            .candidateId(hostile)
            .sessionSetting("statement_timeout", "0'; DROP TABLE canary; --")
            .build();
    // The bad setting value is rejected by the server as a value, inside a bound parameter.
    org.assertj.core.api.Assertions.assertThatThrownBy(lock::tryAcquire)
        .isInstanceOf(AdvisoryLockException.class);
    AdvisoryLock named =
        AdvisoryLock.builder(db.dataSource(), LockKey.named("ns", hostile))
            .candidateId(hostile)
            .build();
    try (AdvisoryLockLease lease = named.tryAcquire().orElseThrow()) {
      LeaderInfo holder = named.currentHolder().orElseThrow();
      assertThat(holder.pid()).isEqualTo(lease.backendPid());
      assertThat(holder.candidateId()).isEqualTo(hostile);
    }
    assertThat(db.queryInts("SELECT count(*)::int FROM canary")).containsExactly(0);
  }

  @Test
  void passwordsNeverAppearInLogsOrExceptions(TestDatabase db) throws Exception {
    String secret = "S3cret-" + System.nanoTime();
    // A reachable server (trust auth ignores the password) and an unreachable one, both with
    // the password in the URL; the candidate logs at DEBUG.
    for (String url :
        new String[] {
          db.jdbcUrl() + (db.jdbcUrl().contains("?") ? "&" : "?") + "password=" + secret,
          "jdbc:postgresql://127.0.0.1:1/nowhere?password=" + secret
        }) {
      Path log = Path.of("target", "security-candidate-" + System.nanoTime() + ".log");
      Process p =
          new ProcessBuilder(FaultCandidate.exitingOnLoss(url, db.user(), "secret-test", 31337))
              .redirectErrorStream(true)
              .redirectOutput(log.toFile())
              .start();
      if (!p.waitFor(3, TimeUnit.SECONDS)) {
        p.toHandle().destroy(); // SIGTERM: graceful close, more log lines
        p.waitFor(15, TimeUnit.SECONDS);
      }
      String output = Files.readString(log, StandardCharsets.UTF_8);
      assertThat(output).isNotBlank().doesNotContain(secret);
    }
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setUrl("jdbc:postgresql://127.0.0.1:1/nowhere");
    ds.setPassword(secret);
    try {
      AdvisoryLock.of(ds, LockKey.of(1L)).tryAcquire();
    } catch (AdvisoryLockException e) {
      java.io.StringWriter trace = new java.io.StringWriter();
      e.printStackTrace(new java.io.PrintWriter(trace));
      assertThat(trace.toString()).doesNotContain(secret);
    }
  }

  @Test
  void unprivilegedRoleLeadsAndHolderLookupDegradesToWhatItMaySee(TestDatabase db)
      throws Exception {
    String app = "retsu_app_" + db.name().hashCode() % 1000;
    String other = "retsu_other_" + db.name().hashCode() % 1000;
    app = app.replace('-', 'm');
    other = other.replace('-', 'm');
    db.execute(
        "DROP ROLE IF EXISTS "
            + app
            + "; DROP ROLE IF EXISTS "
            + other
            + "; CREATE ROLE "
            + app
            + " LOGIN NOSUPERUSER; CREATE ROLE "
            + other
            + " LOGIN NOSUPERUSER;");
    PGSimpleDataSource asApp = db.dataSource();
    asApp.setUser(app);
    PGSimpleDataSource asOther = db.dataSource();
    asOther.setUser(other);
    LockKey key = LockKey.named("retsu-test", "unprivileged");
    java.util.List<Term> terms = new java.util.concurrent.CopyOnWriteArrayList<>();
    try (LeaderLoop loop =
        LeaderLoop.builder(asApp, key)
            .candidateId("app-1")
            .retryInterval(Duration.ofMillis(200))
            .refreshInterval(Duration.ofMillis(200))
            .timing(FailoverTiming.DEFAULT.withHeartbeatInterval(Duration.ofMillis(200)))
            .listener(
                new LeaderListener() {
                  @Override
                  public void onAcquired(Term term) {
                    terms.add(term);
                  }
                })
            .build()) {
      loop.start(ctx -> {});
      await().atMost(Duration.ofSeconds(20)).until(loop::isLeader);
      LeaderInfo seen = AdvisoryLock.of(asOther, key).currentHolder().orElseThrow();
      assertThat(seen.pid()).isEqualTo(terms.get(0).backendPid());
      // read as another role, the app's session is of no candidate of that role: foreign
      assertThat(seen.foreign()).isTrue();
      assertThat(seen.candidateId()).isEmpty();
      assertThat(AdvisoryLock.of(asApp, key).currentHolder().orElseThrow().candidateId())
          .isEqualTo("app-1");
      assertThat(LeaderInfo.of(asOther, key, app).orElseThrow().candidateId()).isEqualTo("app-1");
      assertThat(seen.lastRenewal()).isEmpty(); // state_change needs pg_read_all_stats
      assertThat(terms.get(0).fencingToken().xid()).isPositive();
    }
    db.execute("DROP ROLE " + app + "; DROP ROLE " + other);
  }
}
