package dev.retsu.lock.quarkus.deployment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.quarkus.LeaderOnly;
import dev.retsu.lock.quarkus.LeadershipGranted;
import dev.retsu.lock.quarkus.LeadershipRevoked;
import dev.retsu.lock.quarkus.RetsuLeaders;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.scheduler.Scheduled;
import io.quarkus.test.QuarkusUnitTest;
import io.smallrye.health.SmallRyeHealth;
import io.smallrye.health.SmallRyeHealthReporter;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A Quarkus application with the extension, a {@code @Scheduled @LeaderOnly} job and SmallRye
 * Health, on the project's test PostgreSQL: the job runs only while the application leads, on the
 * session that holds the lock; a standby is ready (UP) and says why it does not lead.
 */
class LeaderOnlyIntegrationTest {

  private static final QuarkusTestDb DB = QuarkusTestDb.named("quarkus_leader_only");
  private static final LockKey KEY = LockKey.named("retsu-lock", "jobs");
  private static final String KEY_MATCH =
      " AND objsubid = 1 AND classid = ((?::bigint >> 32) & 4294967295)::oid"
          + " AND objid = (?::bigint & 4294967295)::oid";

  @RegisterExtension
  static final QuarkusUnitTest APP =
      DB.on(
          new QuarkusUnitTest()
              .withApplicationRoot(
                  jar -> jar.addClasses(Jobs.class, QuarkusTestDb.class, OurCheck.class))
              .overrideConfigKey("quarkus.http.test-port", "0")
              .overrideConfigKey("retsu.lock.leaders.jobs.retry-interval", "200ms")
              .overrideConfigKey("retsu.lock.leaders.jobs.refresh-interval", "1s")
              .overrideConfigKey("retsu.lock.leaders.jobs.close-timeout", "5s"));

  @Inject Jobs jobs;
  @Inject RetsuLeaders leaders;
  @Inject SmallRyeHealthReporter health;
  @Inject MeterRegistry registry;

  /** The application's jobs: one on every instance (the scheduler's ticks), one leader-only. */
  @Singleton // no client proxy: the test reads the fields
  static class Jobs {
    final AtomicInteger ticks = new AtomicInteger();
    final AtomicInteger leaderRuns = new AtomicInteger();
    final List<Integer> sessionPids = new CopyOnWriteArrayList<>();
    final List<LeadershipGranted> granted = new CopyOnWriteArrayList<>();
    final List<LeadershipRevoked> revoked = new CopyOnWriteArrayList<>();
    @Inject RetsuLeaders leaders;

    @Scheduled(every = "0.1s")
    void tick() {
      ticks.incrementAndGet();
    }

    @Scheduled(every = "0.1s")
    @LeaderOnly("jobs")
    void report() throws SQLException {
      leaderRuns
          .incrementAndGet(); // first: a run that got past @LeaderOnly counts, whatever follows
      Connection c = leaders.leader("jobs").context().connection();
      try (Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
        rs.next();
        sessionPids.add(rs.getInt(1));
      }
    }

    void onGranted(@Observes LeadershipGranted event) {
      granted.add(event);
    }

    void onRevoked(@Observes LeadershipRevoked event) {
      revoked.add(event);
    }
  }

  @Test
  void aLeaderOnlyJobRunsOnlyOnTheLeaderOnTheLocksSessionAndAStandbyIsHealthy() throws Exception {
    await().atMost(Duration.ofSeconds(30)).until(() -> jobs.sessionPids.size() >= 2);
    int holder = holderPid();
    assertThat(jobs.sessionPids)
        .as("the job's session is the one that holds the lock")
        .contains(holder);
    assertThat(jobs.granted).extracting(LeadershipGranted::leader).containsExactly("jobs");
    assertThat(OurCheck.status(health.getReadiness())).isEqualTo("UP");
    assertThat(registry.find("retsu.lock.leader").tag("lock", "jobs").meters())
        .as("the leader's meters in Quarkus's registry")
        .isNotEmpty();

    try (Connection other = DB.connect()) {
      // queue behind the application's session, then end that session: the key goes to us
      CompletableFuture<Void> taken =
          CompletableFuture.runAsync(
              () -> {
                try (PreparedStatement p = other.prepareStatement("SELECT pg_advisory_lock(?)")) {
                  p.setLong(1, KEY.value());
                  p.execute();
                } catch (SQLException e) {
                  throw new IllegalStateException(e);
                }
              });
      await().atMost(Duration.ofSeconds(10)).until(() -> waiters() == 1);
      try (Connection admin = DB.connect();
          Statement s = admin.createStatement()) {
        s.execute("SELECT pg_terminate_backend(" + holder + ")");
      }
      taken.get();
      await().atMost(Duration.ofSeconds(30)).until(() -> !jobs.revoked.isEmpty());
      assertThat(jobs.revoked.get(0).leader()).isEqualTo("jobs");
      assertThat(jobs.revoked.get(0).reason()).isNotEqualTo(LossReason.CLOSED);
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> standbyReason().contains("reason=held-elsewhere"));

      SmallRyeHealth ready = health.getReadiness();
      assertThat(OurCheck.status(ready))
          .as("a standby is ready: %s", ready.getPayload())
          .isEqualTo("UP");
      assertThat(OurCheck.status(health.getLiveness())).isEqualTo("UP");
      int runs = jobs.leaderRuns.get();
      int ticks = jobs.ticks.get();
      await().atMost(Duration.ofSeconds(30)).until(() -> jobs.ticks.get() >= ticks + 10);
      assertThat(jobs.leaderRuns.get()).as("leader-only runs on a standby").isEqualTo(runs);
      assertThat(leaders.leader("jobs").isLeader()).isFalse();
    }
    // our session ended, so the key is free: the application leads again and the job runs again
    int runs = jobs.leaderRuns.get();
    await().atMost(Duration.ofSeconds(30)).until(() -> jobs.leaderRuns.get() > runs);
    assertThat(leaders.leader("jobs").isLeader()).isTrue();
  }

  private String standbyReason() {
    return String.valueOf(leaders.leader("jobs").details());
  }

  private int holderPid() throws SQLException {
    Integer pid = DB.holderPid(KEY);
    assertThat(pid).as("someone holds %s", KEY).isNotNull();
    return pid;
  }

  private int waiters() throws SQLException {
    try (Connection c = DB.connect();
        PreparedStatement p =
            c.prepareStatement(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                    + KEY_MATCH)) {
      p.setLong(1, KEY.value());
      p.setLong(2, KEY.value());
      try (ResultSet rs = p.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    }
  }
}
