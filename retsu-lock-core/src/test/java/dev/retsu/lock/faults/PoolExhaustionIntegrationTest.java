package dev.retsu.lock.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.AttemptResult;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Scenario 6c: the application exhausts the pool the candidates share. The leader keeps its own
 * connection and keeps leading; the standby's attempts fail but it never gets stuck, and it takes
 * over as soon as a connection is free again.
 */
@ExtendWith(PostgresExtension.class)
class PoolExhaustionIntegrationTest {

  @Test
  void exhaustedPoolNeverStopsTheLeaderOrStrandsTheStandby(TestDatabase db) throws Exception {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(db.jdbcUrl());
    config.setUsername(db.user());
    config.setPassword(db.password());
    config.setMaximumPoolSize(3);
    config.setConnectionTimeout(250);
    config.setPoolName("retsu-lock-test-exhausted");
    LockKey key = LockKey.named("retsu-test", "pool-exhaustion");
    List<AttemptResult> standbyAttempts = new CopyOnWriteArrayList<>();
    AtomicInteger leaderWork = new AtomicInteger();
    try (HikariDataSource pool = new HikariDataSource(config)) {
      LeaderLoop a = FaultTiming.fast(LeaderLoop.builder(pool, key)).candidateId("pool-a").build();
      LeaderLoop b =
          FaultTiming.fast(LeaderLoop.builder(pool, key))
              .candidateId("pool-b")
              .listener(
                  new LeaderListener() {
                    @Override
                    public void onAttempt(AttemptResult result, Duration d, Throwable error) {
                      standbyAttempts.add(result);
                    }
                  })
              .build();
      try {
        a.start(ctx -> leaderWork.incrementAndGet());
        await().atMost(Duration.ofSeconds(20)).until(a::isLeader);
        b.start(ctx -> {});
        await()
            .atMost(Duration.ofSeconds(20))
            .until(() -> standbyAttempts.contains(AttemptResult.HELD_ELSEWHERE));

        // The application takes every connection the pool has left.
        Connection app1 = pool.getConnection();
        Connection app2 = pool.getConnection();
        int before = leaderWork.get();
        await()
            .atMost(Duration.ofSeconds(20))
            .until(() -> standbyAttempts.contains(AttemptResult.ERROR));
        await().atMost(Duration.ofSeconds(20)).until(() -> leaderWork.get() > before + 3);
        assertThat(a.isLeader()).isTrue();

        a.close(); // its session is evicted, which frees one slot: the standby takes it
        await().atMost(Duration.ofSeconds(20)).until(b::isLeader);
        app1.close();
        app2.close();
      } finally {
        a.close();
        b.close();
      }
    }
  }
}
