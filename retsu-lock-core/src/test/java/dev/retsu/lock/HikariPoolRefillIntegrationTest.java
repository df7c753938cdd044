package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.fakes.StderrCapture;
import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A lease ends its session by evicting the connection from HikariCP, and HikariCP replaces an
 * evicted connection only up to {@code minimumIdle}. A thread that began to wait for a connection
 * while the pool was full is served when leases end only if the pool is fixed-size (HikariCP's
 * default); with {@code minimumIdle} below the maximum it waits out {@code connectionTimeout} (a
 * known HikariCP limitation). This is what once made ShedLock's fuzz test fail in CI, on a pool
 * with {@code minimumIdle} 0. Building a lock on such a pool logs one WARN that says so.
 */
@ExtendWith(PostgresExtension.class)
class HikariPoolRefillIntegrationTest {

  private static final Duration CONNECTION_TIMEOUT = Duration.ofSeconds(2);

  @Test
  void aFixedSizeHikariPoolServesAThreadThatWaitedWhileLeasesHeldEveryConnection(TestDatabase db)
      throws Exception {
    try (HikariDataSource pool = pool(db, "retsu-lock-test-fixed", 2, -1)) {
      assertThat(thirdAttemptAfterTwoLeasesEnd(pool)).isEqualTo("acquired");
    }
  }

  @Test
  void aHikariPoolWithMinimumIdleBelowItsMaximumLeavesThatThreadWaitingOutConnectionTimeout(
      TestDatabase db) throws Exception {
    try (HikariDataSource pool = pool(db, "retsu-lock-test-elastic", 2, 0)) {
      assertThat(thirdAttemptAfterTwoLeasesEnd(pool))
          .startsWith("AdvisoryLockException")
          .contains("Cannot connect to the database");
    }
  }

  @Test
  void buildingALockOnAHikariPoolWithMinimumIdleBelowItsMaximumWarnsOncePerPool(TestDatabase db)
      throws Exception {
    List<String> elastic;
    List<String> forGroup;
    List<String> forWatch;
    List<String> fixed;
    try (HikariDataSource pool = pool(db, "retsu-lock-test-warned", 4, 1);
        HikariDataSource groupPool = pool(db, "retsu-lock-test-warned-group", 4, 0);
        HikariDataSource watchPool = pool(db, "retsu-lock-test-warned-watch", 4, 0);
        HikariDataSource fixedPool = pool(db, "retsu-lock-test-quiet", 4, 4)) {
      elastic =
          warnings(
              () -> {
                AdvisoryLock.of(pool, TestKeys.next());
                LeaderLoop.builder(pool, TestKeys.next()).build().close();
              });
      forGroup =
          warnings(
              () ->
                  LeaderGroup.builder(groupPool, "refill", List.of(TestKeys.next()))
                      .build()
                      .close());
      forWatch = warnings(() -> LeaderWatch.builder(watchPool).open().close());
      fixed = warnings(() -> AdvisoryLock.of(fixedPool, TestKeys.next()));
    }
    assertThat(forGroup).singleElement().asString().contains("retsu-lock-test-warned-group");
    assertThat(forWatch).singleElement().asString().contains("retsu-lock-test-warned-watch");
    assertThat(elastic)
        .singleElement()
        .satisfies(
            line ->
                assertThat(line)
                    .contains("HikariCP pool retsu-lock-test-warned")
                    .contains("minimumIdle=1 below maximumPoolSize=4")
                    .contains("connectionTimeout (2000 ms)"));
    assertThat(fixed).isEmpty();
  }

  @Test
  void theWarningNamesAPoolThatHasNoNameYetByItsUrlWithoutTheQuery(TestDatabase db)
      throws Exception {
    List<String> unnamed;
    // Built as Spring Boot builds it: not started, no name (HikariCP names it when it starts).
    try (HikariDataSource pool = new HikariDataSource()) {
      pool.setJdbcUrl(db.jdbcUrl() + "?password=secret");
      pool.setUsername(db.user());
      pool.setPassword(db.password());
      pool.setMaximumPoolSize(4);
      pool.setMinimumIdle(1);
      unnamed = warnings(() -> AdvisoryLock.of(pool, TestKeys.next()));
    }
    assertThat(unnamed)
        .singleElement()
        .asString()
        .contains(
            "HikariCP pool (not named yet; set poolName, or spring.datasource.hikari.pool-name"
                + " under Spring Boot) of jdbc:postgresql://")
        .doesNotContain("pool null", "secret");
  }

  /**
   * Two leases hold both of the pool's connections; a third attempt begins to wait for one; then
   * both leases end. Returns "acquired", or the exception the third attempt ended with.
   */
  private static String thirdAttemptAfterTwoLeasesEnd(HikariDataSource pool) throws Exception {
    AdvisoryLockLease first = AdvisoryLock.of(pool, TestKeys.next()).tryAcquire().orElseThrow();
    AdvisoryLockLease second = AdvisoryLock.of(pool, TestKeys.next()).tryAcquire().orElseThrow();
    AdvisoryLock third = AdvisoryLock.of(pool, TestKeys.next());
    CompletableFuture<String> attempt =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                Optional<AdvisoryLockLease> lease = third.tryAcquire();
                lease.ifPresent(AdvisoryLockLease::close);
                return lease.isPresent() ? "acquired" : "held elsewhere";
              } catch (RuntimeException e) {
                return e.getClass().getSimpleName() + ": " + e.getMessage();
              }
            });
    // HikariCP's adder thread looks at the pool once, when the thread begins to wait, and adds
    // nothing to a full pool; its decision is not observable, so hold the state it decides on (one
    // thread waiting, every connection leased) for half a second before the leases end.
    await()
        .atMost(Duration.ofSeconds(10))
        .during(Duration.ofMillis(500))
        .until(
            () ->
                pool.getHikariPoolMXBean().getThreadsAwaitingConnection() == 1
                    && pool.getHikariPoolMXBean().getTotalConnections() == 2);
    first.close();
    second.close();
    return attempt.get(CONNECTION_TIMEOUT.toSeconds() + 20, TimeUnit.SECONDS);
  }

  /** A pool of {@code max} connections; a negative {@code minimumIdle} leaves it unset. */
  private static HikariDataSource pool(TestDatabase db, String name, int max, int minimumIdle) {
    HikariConfig c = new HikariConfig();
    c.setPoolName(name);
    c.setJdbcUrl(db.jdbcUrl());
    c.setUsername(db.user());
    c.setPassword(db.password());
    c.setMaximumPoolSize(max);
    if (minimumIdle >= 0) {
      c.setMinimumIdle(minimumIdle); // else unset: HikariCP's default, the maximum
    }
    c.setConnectionTimeout(CONNECTION_TIMEOUT.toMillis());
    return new HikariDataSource(c);
  }

  /** The WARN lines that name HikariCP, logged while {@code action} runs. */
  private static List<String> warnings(StderrCapture.Action action) throws Exception {
    return Arrays.stream(StderrCapture.during(action).split("\n"))
        .filter(l -> l.contains("WARN") && l.contains("HikariCP pool"))
        .collect(Collectors.toList());
  }
}
