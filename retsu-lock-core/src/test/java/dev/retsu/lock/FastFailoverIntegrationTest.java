package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.testing.FaultProxy;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The fast-failover settings keep the guarantee: a leader cut off from its server stops acting
 * before the server frees its lock, and a standby leads within a few seconds, for POLL and WAIT
 * standbys. The figures (median takeover against peers with a 3 s TTL) are the failover
 * benchmark's; this checks the order of events and that the bound is the preset's, not the
 * defaults' 11 s.
 */
@ExtendWith(PostgresExtension.class)
class FastFailoverIntegrationTest {

  private final List<AutoCloseable> open = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (AutoCloseable c : open) {
      c.close();
    }
  }

  @ParameterizedTest
  @MethodSource("dev.retsu.lock.faults.FaultModes#waitByDefault")
  void aPartitionedLeaderStopsBeforeAFastStandbyLeadsWithinSeconds(
      TakeoverMode mode, TestDatabase db) throws Exception {
    FaultProxy proxy = FaultProxy.inFrontOf(db.jdbcUrl());
    open.add(proxy);
    PGSimpleDataSource viaProxy = db.dataSource();
    viaProxy.setUrl(proxy.rewrite(db.jdbcUrl()));
    LockKey key = TestKeys.next();
    AtomicLong lastCheck = new AtomicLong();
    CountDownLatch leading = new CountDownLatch(1);
    LeaderLoop a =
        LeaderLoop.builder(viaProxy, key)
            .candidateId("fast-a")
            .fastFailover()
            .refreshTimeout(Duration.ofMinutes(1))
            .build();
    open.add(a);
    a.start(
        ctx -> {
          leading.countDown();
          while (true) {
            ctx.ensureLeader(); // throws once the term is over
            lastCheck.set(System.nanoTime());
            LockSupport.parkNanos(1_000_000L);
          }
        });
    assertThat(leading.await(20, TimeUnit.SECONDS)).isTrue();
    AtomicLong acquired = new AtomicLong();
    AtomicLong attempts = new AtomicLong();
    LeaderLoop b =
        LeaderLoop.builder(db.dataSource(), key)
            .candidateId("fast-b")
            .fastFailover()
            .takeover(mode)
            .listener(
                new LeaderListener() {
                  @Override
                  public void onAttempt(AttemptResult result, Duration took, Throwable error) {
                    attempts.incrementAndGet();
                  }

                  @Override
                  public void onAcquired(Term term) {
                    acquired.set(System.nanoTime());
                  }
                })
            .build();
    open.add(b);
    b.start(ctx -> {});
    // b is a standby before the cut: it attempted (POLL) or waits in the server (WAIT).
    await()
        .atMost(Duration.ofSeconds(20))
        .until(
            () ->
                mode == TakeoverMode.POLL
                    ? attempts.get() > 0
                    : db.waitingForAdvisoryLocks("retsu-lock:fast-b") == 1);
    assertThat(b.isLeader()).isFalse();

    long cut = System.nanoTime();
    proxy.blackhole();

    // The defaults would take 11 s or more (the server bound); the preset's bound is 2 s.
    await().atMost(Duration.ofSeconds(6)).until(() -> acquired.get() != 0);
    assertThat(lastCheck.get())
        .as("a's last passing check came before b's term started")
        .isLessThan(acquired.get());
    assertThat(Duration.ofNanos(lastCheck.get() - cut))
        .as("a fenced itself within its 1 s deadline")
        .isLessThan(Duration.ofMillis(1_500));
  }
}
