package dev.retsu.lock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.testing.LoginOnlyRole;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ApplicationContext;

/**
 * What a standby says about itself, and what a yield tells the operator, against the real
 * PostgreSQL: a WAIT standby queued behind the holder says {@code held-elsewhere} (at start and
 * after it yielded), not {@code starting} or {@code stepped-down} until its wait times out; a
 * standby's 409 names the holder that a GET shows; a leader's 200 says whether a candidate was
 * waiting on the key, and with POLL standbys that nobody was and the key stays free until a
 * standby's next attempt. Shared by both Spring Boot lines.
 */
@ExtendWith(PostgresExtension.class)
public abstract class AbstractStandbyReasonAndYieldIntegrationTest {

  private static final AtomicLong KEYS = new AtomicLong(9_500_000);

  private static TestDatabase db;

  /** The line under test. */
  protected final TestedBootLine line;

  /**
   * Creates the test for one line.
   *
   * @param line the line
   */
  protected AbstractStandbyReasonAndYieldIntegrationTest(TestedBootLine line) {
    this.line = line;
  }

  @BeforeAll
  static void database(TestDatabase database) {
    db = database;
  }

  private static HikariDataSource pool(String id) {
    HikariConfig c = new HikariConfig();
    c.setPoolName("retsu-lock-boot-standby-" + id);
    c.setJdbcUrl(db.jdbcUrl());
    c.setUsername(db.user());
    c.setPassword(db.password());
    c.setMaximumPoolSize(3);
    return new HikariDataSource(c);
  }

  private ApplicationContextRunner candidate(String id, long key, String takeover) {
    List<Class<?>> all = new ArrayList<>(line.autoConfigurations());
    all.add(RetsuLockAutoConfiguration.class);
    all.add(RetsuLockEndpointAutoConfiguration.class);
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(all.toArray(Class<?>[]::new)))
        .withBean(DataSource.class, () -> pool(id))
        .withPropertyValues(
            "management.endpoints.web.exposure.include=leaders",
            "retsu.lock.candidate-id=" + id,
            "retsu.lock.leaders.job.key.value=" + key,
            "retsu.lock.leaders.job.takeover=" + takeover,
            "retsu.lock.leaders.job.retry-interval=300ms",
            "retsu.lock.leaders.job.refresh-interval=300ms");
  }

  @Test
  void aWaitStandbyQueuedBehindTheHolderSaysHeldElsewhereAtStartAndAfterItYielded()
      throws Exception {
    long key = KEYS.incrementAndGet() + 1000L * line.major();
    try (Connection holder = db.connect()) {
      lock(holder, key);
      candidate("waiter", key, "wait")
          .run(
              context -> {
                assertThat(context).hasNotFailed();
                RetsuLeader leader = context.getBean(RetsuLeaders.class).get("job");
                // The wait lasts wait-timeout (60 s) before an attempt reports: health must not.
                await()
                    .atMost(Duration.ofSeconds(15))
                    .until(() -> "held-elsewhere".equals(reason(context)));
                assertThat(line.healthStatus(context)).isEqualTo("UP");

                unlock(holder, key);
                await().atMost(Duration.ofSeconds(15)).until(leader::isLeader);

                // Another session queues on the key; the leader yields to it, and after its
                // cooldown queues behind it.
                CompletableFuture<Void> queued =
                    CompletableFuture.runAsync(
                        () -> {
                          try {
                            lock(holder, key);
                          } catch (Exception e) {
                            throw new IllegalStateException(e);
                          }
                        });
                await().atMost(Duration.ofSeconds(10)).until(() -> waiting(key) == 1);
                assertThat(leader.yield(Duration.ofMillis(300))).isTrue();
                queued.get();
                await()
                    .atMost(Duration.ofSeconds(15))
                    .until(() -> "held-elsewhere".equals(reason(context)));
                assertThat(leader.isLeader()).isFalse();
                unlock(holder, key);
              });
    }
  }

  @Test
  void aStandbys409NamesTheHolderAndALeaders200SaysWhetherACandidateWasWaiting() {
    long key = KEYS.incrementAndGet() + 1000L * line.major();
    candidate("a", key, "poll")
        .run(
            a -> {
              RetsuLeader leaderA = a.getBean(RetsuLeaders.class).get("job");
              await().atMost(Duration.ofSeconds(15)).until(leaderA::isLeader);
              candidate("b", key, "wait")
                  .run(
                      b -> {
                        RetsuLeader leaderB = b.getBean(RetsuLeaders.class).get("job");
                        await()
                            .atMost(Duration.ofSeconds(15))
                            .until(() -> "held-elsewhere".equals(reason(b)));
                        // The standby's 409, without the watch: the holder a GET shows.
                        LeadersEndpoint endpointB = b.getBean(LeadersEndpoint.class);
                        WebEndpointResponse<Map<String, Object>> refused =
                            endpointB.yield("job", null, null);
                        assertThat(refused.getStatus()).isEqualTo(409);
                        @SuppressWarnings("unchecked")
                        Map<String, Object> shown =
                            (Map<String, Object>) endpointB.leader("job").get("holder");
                        assertThat(shown).containsEntry("candidate", "a");
                        assertThat(refused.getBody()).containsEntry("takeover", "WAIT");
                        assertThat(holderOf(refused))
                            .isNotNull()
                            .containsEntry("candidate", "a")
                            .containsEntry("pid", shown.get("pid"));

                        // A yields with a WAIT standby queued: it is granted the key at once.
                        WebEndpointResponse<Map<String, Object>> toWaiter =
                            a.getBean(LeadersEndpoint.class).yield("job", "60s", null);
                        assertThat(toWaiter.getStatus()).isEqualTo(200);
                        assertThat(toWaiter.getBody())
                            .containsEntry("takeover", "POLL")
                            .containsEntry("waitingCandidates", 1);
                        assertThat(toWaiter.getBody().get("next").toString())
                            .contains("granted it at once");
                        await().atMost(Duration.ofSeconds(15)).until(leaderB::isLeader);

                        // B yields with only a POLL standby (A, cooling down) and a session of
                        // another role queued on the key under candidate a's name: no candidate
                        // waits, whatever that session calls itself; the answer says so, and
                        // that the key stays free until a standby's next attempt.
                        try (LoginOnlyRole other = LoginOnlyRole.create(db, "queued")) {
                          CompletableFuture<LoginOnlyRole.Holder> queued =
                              CompletableFuture.supplyAsync(
                                  () -> {
                                    try {
                                      return other.hold("retsu-lock:a", key);
                                    } catch (java.sql.SQLException e) {
                                      throw new IllegalStateException(e);
                                    }
                                  });
                          await()
                              .atMost(Duration.ofSeconds(15))
                              .until(() -> db.waitingForAdvisoryLocks("retsu-lock:a") == 1);
                          WebEndpointResponse<Map<String, Object>> toPoller =
                              endpointB.yield("job", "100ms", null);
                          assertThat(toPoller.getStatus()).isEqualTo(200);
                          assertThat(toPoller.getBody()).containsEntry("waitingCandidates", 0);
                          assertThat(toPoller.getBody().get("next").toString())
                              .contains(
                                  "no candidate was waiting on the key",
                                  "1 session of another role also waited on the key",
                                  "until a POLL standby's next attempt",
                                  "may take the key back");
                          queued.get(15, java.util.concurrent.TimeUnit.SECONDS).close();
                        }
                      });
            });
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> holderOf(WebEndpointResponse<Map<String, Object>> answer) {
    return (Map<String, Object>) answer.getBody().get("holder");
  }

  private Object reason(ApplicationContext context) {
    Object job = ((Map<?, ?>) line.healthDetails(context).get("leaders")).get("job");
    Object standby = ((Map<?, ?>) job).get("standby");
    return standby == null ? null : ((Map<?, ?>) standby).get("reason");
  }

  private static void lock(Connection c, long key) throws Exception {
    try (PreparedStatement ps = c.prepareStatement("SELECT pg_advisory_lock(?)")) {
      ps.setLong(1, key);
      ps.execute();
    }
  }

  private static void unlock(Connection c, long key) throws Exception {
    try (PreparedStatement ps = c.prepareStatement("SELECT pg_advisory_unlock(?)")) {
      ps.setLong(1, key);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        assertThat(rs.getBoolean(1)).isTrue();
      }
    }
  }

  private static int waiting(long key) throws Exception {
    return db.queryInts(
            "SELECT count(*)::int FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                + " AND objsubid = 1 AND ((classid::int8 << 32) | objid::int8) = ?",
            key)
        .get(0);
  }
}
