package dev.retsu.lock.quarkus.deployment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.quarkus.LeaderOnly;
import dev.retsu.lock.quarkus.LeadershipGranted;
import dev.retsu.lock.quarkus.LeadershipRevoked;
import dev.retsu.lock.quarkus.RetsuLeaderGroup;
import dev.retsu.lock.quarkus.RetsuLeaders;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.scheduler.Scheduled;
import io.quarkus.test.QuarkusUnitTest;
import io.smallrye.health.SmallRyeHealthReporter;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A Quarkus application with a group of two keys ({@code retsu.lock.groups.g.keys=k1,k2}) and a
 * {@code @Scheduled @LeaderOnly(value = "g", key = ...)} job per key, on the project's test
 * PostgreSQL: each job runs on the owner of its key, on the session that holds that key; once the
 * member hands k2 over in the middle of a run of k2's job, the hand-over returns only after that
 * run ended, k2's job runs no more while k1's goes on, and the group stays UP; each key's term is
 * told as a leadership event naming the group, and the group's meters are in Quarkus's registry.
 */
class GroupLeaderOnlyIntegrationTest {

  private static final QuarkusTestDb DB = QuarkusTestDb.named("quarkus_group_leader_only");
  private static final LockKey K1 = LockKey.named("g", "k1");
  private static final LockKey K2 = LockKey.named("g", "k2");

  @RegisterExtension
  static final QuarkusUnitTest APP =
      DB.on(
          new QuarkusUnitTest()
              .withApplicationRoot(
                  jar -> jar.addClasses(Jobs.class, QuarkusTestDb.class, OurCheck.class))
              .overrideConfigKey("quarkus.http.test-port", "0")
              .overrideConfigKey("retsu.lock.groups.g.keys", "k1,k2")
              .overrideConfigKey("retsu.lock.groups.g.refresh-interval", "1s")
              .overrideConfigKey("retsu.lock.groups.g.membership-interval", "200ms")
              .overrideConfigKey("retsu.lock.groups.g.close-timeout", "5s"));

  @Inject Jobs jobs;
  @Inject RetsuLeaders leaders;
  @Inject SmallRyeHealthReporter health;
  @Inject MeterRegistry registry;

  /** One job per key of the group, each on the session that holds its key. */
  @Singleton // no client proxy: the test reads the fields
  static class Jobs {
    final List<Integer> k1Pids = new CopyOnWriteArrayList<>();
    final AtomicInteger k2Runs = new AtomicInteger();
    final AtomicInteger k2Running = new AtomicInteger();
    final List<LeadershipGranted> granted = new CopyOnWriteArrayList<>();
    final List<LeadershipRevoked> revoked = new CopyOnWriteArrayList<>();
    @Inject RetsuLeaders leaders;

    void onGranted(@Observes LeadershipGranted event) {
      granted.add(event);
    }

    void onRevoked(@Observes LeadershipRevoked event) {
      revoked.add(event);
    }

    @Scheduled(every = "0.1s")
    @LeaderOnly(value = "g", key = "k1")
    void forK1() throws SQLException {
      Connection c = leaders.group("g").context("k1").connection();
      try (Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
        rs.next();
        k1Pids.add(rs.getInt(1));
      }
    }

    @Scheduled(every = "0.1s")
    @LeaderOnly(value = "g", key = "k2")
    void forK2() throws SQLException {
      k2Runs.incrementAndGet(); // first: a run that got past @LeaderOnly counts
      k2Running.incrementAndGet();
      try (Statement s = leaders.group("g").context("k2").connection().createStatement()) {
        s.execute("SELECT 1"); // work on k2's session
        // then 300 ms of work off the database that finishes even when interrupted: the
        // hand-over must wait for it (waiting on the session alone would not)
        long end = System.nanoTime() + Duration.ofMillis(300).toNanos();
        while (System.nanoTime() < end) {
          LockSupport.parkNanos(end - System.nanoTime());
        }
      } finally {
        k2Running.decrementAndGet();
      }
    }
  }

  @Test
  void aKeysJobRunsOnlyOnItsOwnerOnThatKeysSessionAndNotOnceTheKeyIsHandedOver() throws Exception {
    RetsuLeaderGroup group = leaders.group("g");
    await().atMost(Duration.ofSeconds(30)).until(() -> group.ownedKeys().size() == 2);
    await().atMost(Duration.ofSeconds(30)).until(() -> jobs.k1Pids.size() >= 2);
    await().atMost(Duration.ofSeconds(30)).until(() -> jobs.k2Runs.get() >= 2);
    assertThat(jobs.k1Pids)
        .as("k1's job runs on the session that holds k1")
        .contains(DB.holderPid(K1));
    assertThat(OurCheck.status(health.getReadiness())).isEqualTo("UP");
    assertThat(jobs.granted)
        .extracting(e -> e.leader() + "/" + e.term().key())
        .containsExactlyInAnyOrder("g/" + K1, "g/" + K2);
    assertThat(registry.find("retsu.lock.group.keys.held").tag("group", "g").gauge())
        .as("the group's meters in Quarkus's registry")
        .isNotNull();
    assertThat(registry.find("retsu.lock.group.keys.held").tag("group", "g").gauge().value())
        .isEqualTo(2.0);

    // hand k2 over in the middle of one of its job's runs (nobody else takes it)
    await()
        .atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(5))
        .until(() -> jobs.k2Running.get() > 0);
    assertThat(group.group().yield(K2, Duration.ofMinutes(10))).isTrue();
    assertThat(jobs.k2Running.get()).as("k2's running work ended before k2 was released").isZero();
    assertThat(jobs.revoked)
        .extracting(e -> e.leader() + "/" + e.term().key() + "/" + e.reason())
        .containsExactly("g/" + K2 + "/" + LossReason.YIELDED);
    assertThat(group.owns("k2")).isFalse();
    assertThat(DB.holderPid(K2)).as("k2 is released").isNull();
    int k2Runs = jobs.k2Runs.get();
    int k1Runs = jobs.k1Pids.size();
    await().atMost(Duration.ofSeconds(30)).until(() -> jobs.k1Pids.size() >= k1Runs + 10);
    assertThat(jobs.k2Runs.get())
        .as("runs of k2's job on a member that does not own k2")
        .isEqualTo(k2Runs);
    assertThat(OurCheck.status(health.getReadiness()))
        .as("a member owning fewer keys is still healthy")
        .isEqualTo("UP");
    assertThat(String.valueOf(group.details())).contains("role=member", "owned=[k1]");
  }
}
