package dev.retsu.lock.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.AdvisoryLock;
import dev.retsu.lock.AdvisoryLockLease;
import dev.retsu.lock.FailoverTiming;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.ServerPath;
import dev.retsu.lock.TakeoverMode;
import dev.retsu.lock.Term;
import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.fakes.TestLoops;
import dev.retsu.lock.faults.FaultInjectionIntegrationTest.Fault;
import dev.retsu.lock.faults.FaultInjectionIntegrationTest.Setup;
import dev.retsu.lock.testing.FaultProxy;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The fault suite's partition and pause scenarios behind a real proxy: PgBouncer in session mode,
 * and HAProxy in TCP mode (as in front of a Patroni primary). Each candidate reaches the proxy
 * through its own fault proxy, so a partition cuts the candidate off the proxy while the proxy's
 * connection to PostgreSQL stays up: the server's TCP keepalives then watch the proxy and never
 * fire, and only {@code idle_session_timeout} frees the lock, after the leader fenced itself.
 * {@link dev.retsu.lock.testing.TermChecker} judges every round as in {@link
 * FaultInjectionIntegrationTest}; figures go to the same {@code target/fault-results.tsv}.
 */
@ExtendWith(PostgresExtension.class)
class ProxiedFaultIntegrationTest {

  /** The proxy in front of PostgreSQL. */
  enum Proxy {
    PGBOUNCER_SESSION,
    HAPROXY
  }

  /** Configuration and logs of the proxy; removed after each test. */
  @TempDir Path dir;

  /**
   * Every proxy with every fault. The full matrix (each also in POLL and WAIT) runs with {@code
   * -Pfaults-full}; the default build runs each pair in one mode, alternating so that each proxy,
   * each fault and each mode is struck (4 cases instead of 8, half a minute less of CI).
   */
  static Stream<Arguments> cases() {
    boolean full = FaultModes.FULL;
    Fault[] faults = {
      FaultInjectionIntegrationTest.PARTITION, FaultInjectionIntegrationTest.PAUSE_LEADER
    };
    TakeoverMode[] modes = TakeoverMode.values();
    List<Arguments> all = new ArrayList<>();
    for (Proxy p : Proxy.values()) {
      for (int f = 0; f < faults.length; f++) {
        for (TakeoverMode m : modes) {
          // one mode per pair by default, the other one for the next fault and the next proxy
          if (full || m == modes[(p.ordinal() + f) % modes.length]) {
            all.add(Arguments.of(p, faults[f], m));
          }
        }
      }
    }
    return all.stream();
  }

  private ProxyProcess start(Proxy proxy, TestDatabase db) throws Exception {
    return proxy == Proxy.HAPROXY
        ? ProxyProcess.haproxy(db, dir)
        : ProxyProcess.pgbouncer(db, dir, "session", 20);
  }

  /**
   * A partition between the leader and the proxy, or a pause of the leader, longer than every
   * bound: the leader stops acting before the server frees its lock, with the proxy in between.
   */
  @ParameterizedTest(name = "{0} {1} {2}")
  @MethodSource("cases")
  void partitionAndPauseBehindAProxyNeverGiveTwoActingLeaders(
      Proxy proxy, Fault fault, TakeoverMode mode, TestDatabase db) throws Exception {
    try (ProxyProcess p = start(proxy, db)) {
      FaultInjectionIntegrationTest.scenario(
          db,
          p.jdbcUrl(),
          proxy.name().toLowerCase(Locale.ROOT).replace('_', '-') + "." + fault.name(),
          List.of(fault),
          mode,
          FaultInjectionIntegrationTest.ROUNDS,
          Setup.two(db));
    }
  }

  /**
   * HAProxy's timeouts at 1 s: below the 4 s self-fencing deadline, above the 0.5 s heartbeat
   * interval. When the proxy ends the cut-off leader's server session and another candidate takes
   * the lock, the leader's heartbeat is already in flight, and a check waits for it: no check
   * passes after the takeover, and the leader fences itself at its deadline.
   */
  @Test
  void aProxyTimeoutAboveTheHeartbeatIntervalKeepsACutOffLeaderFromActingAfterTheTakeover(
      TestDatabase db) throws Exception {
    assertThat(checksAfterTheTakeover(db, Duration.ofMillis(500))).isZero();
  }

  /**
   * The same proxy, with the leader's heartbeat every 1.5 s, longer than the proxy's 1 s timeout:
   * the proxy frees the lock while no heartbeat is in flight and nothing has reached the leader, so
   * its checks pass after the other candidate took the lock, until its next heartbeat. This is why
   * a proxy's idle timeouts must be longer than the heartbeat interval (docs/MANAGED-POSTGRES.md
   * asks for longer than {@code selfFenceAfter}, for margin).
   */
  @Test
  void aProxyTimeoutBelowTheHeartbeatIntervalLetsACutOffLeaderPassChecksAfterTheTakeover(
      TestDatabase db) throws Exception {
    assertThat(checksAfterTheTakeover(db, Duration.ofMillis(1500))).isPositive();
  }

  /**
   * A leader behind HAProxy (1 s timeouts) whose task only checks (no statement on the session) is
   * cut off from the proxy; a direct candidate takes over once the proxy has ended the leader's
   * server session. Returns how many of the cut-off leader's checks passed after that takeover.
   */
  private long checksAfterTheTakeover(TestDatabase db, Duration heartbeat) throws Exception {
    LockKey key = TestKeys.next();
    List<Long> passes = new CopyOnWriteArrayList<>();
    AtomicLong takenOver = new AtomicLong();
    try (ProxyProcess haproxy = ProxyProcess.haproxy(db, dir, Duration.ofSeconds(1));
        FaultProxy cut = FaultProxy.inFrontOf(haproxy.jdbcUrl())) {
      PGSimpleDataSource throughCut = haproxy.dataSource();
      throughCut.setUrl(cut.rewrite(haproxy.jdbcUrl()));
      LeaderLoop a =
          TestLoops.fast(LeaderLoop.builder(throughCut, key))
              .candidateId("behind-short-proxy")
              // bounds wide enough for a 1.5 s heartbeat: server 5 s / 6 s idle, fence at 4 s
              .timing(
                  FailoverTiming.DEFAULT
                      .withServerKeepalives(Duration.ofSeconds(2), Duration.ofSeconds(1), 3)
                      .withServerIdleSessionTimeout(Duration.ofSeconds(6))
                      .withSelfFenceAfter(Duration.ofSeconds(4))
                      .withHeartbeatInterval(heartbeat)
                      .withRoundTripTimeout(Duration.ofSeconds(4)))
              .refreshTimeout(Duration.ofSeconds(30))
              .build();
      LeaderLoop b =
          TestLoops.fast(LeaderLoop.builder(db.dataSource(), key))
              .candidateId("direct")
              .listener(
                  new LeaderListener() {
                    @Override
                    public void onAcquired(Term term) {
                      takenOver.compareAndSet(0, System.nanoTime());
                    }
                  })
              .build();
      try {
        a.start(
            ctx -> {
              // Work outside the database: checks only, no statement on the session.
              while (!Thread.currentThread().isInterrupted()) {
                ctx.ensureLeader();
                passes.add(System.nanoTime());
                java.util.concurrent.locks.LockSupport.parkNanos(20_000_000L);
              }
            });
        await().atMost(Duration.ofSeconds(30)).until(() -> passes.size() > 5);
        cut.blackhole();
        b.start(ctx -> {});
        await().atMost(Duration.ofSeconds(30)).until(() -> takenOver.get() != 0);
        await().atMost(Duration.ofSeconds(30)).until(() -> !a.isLeader());
        List<Long> late = passes.stream().filter(t -> t > takenOver.get()).toList();
        FaultInjectionIntegrationTest.record(
            "proxy-timeout-1s.heartbeat-" + heartbeat.toMillis() + "ms.checks-after-takeover",
            1,
            late.size(),
            late.isEmpty()
                ? ""
                : "last one "
                    + (late.get(late.size() - 1) - takenOver.get()) / 1_000_000
                    + " ms after the takeover");
        return late.size();
      } finally {
        cut.heal();
        a.close();
        b.close();
      }
    }
  }

  /** Through either proxy the lock's session is seen as proxied; directly it is not. */
  @ParameterizedTest
  @EnumSource(Proxy.class)
  void aSessionThroughTheProxyIsProxiedAndADirectOneIsNot(Proxy proxy, TestDatabase db)
      throws Exception {
    try (ProxyProcess p = start(proxy, db);
        AdvisoryLockLease through =
            AdvisoryLock.of(p.dataSource(), TestKeys.next()).tryAcquire().orElseThrow();
        AdvisoryLockLease direct =
            AdvisoryLock.of(db.dataSource(), TestKeys.next()).tryAcquire().orElseThrow()) {
      assertThat(through.serverPath()).isEqualTo(ServerPath.PROXIED);
      assertThat(direct.serverPath()).isEqualTo(ServerPath.DIRECT);
    }
  }
}
