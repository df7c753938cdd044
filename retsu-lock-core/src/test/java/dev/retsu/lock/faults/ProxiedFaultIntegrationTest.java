package dev.retsu.lock.faults;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.AdvisoryLock;
import dev.retsu.lock.AdvisoryLockLease;
import dev.retsu.lock.ServerPath;
import dev.retsu.lock.TakeoverMode;
import dev.retsu.lock.TestKeys;
import dev.retsu.lock.faults.FaultInjectionIntegrationTest.Fault;
import dev.retsu.lock.faults.FaultInjectionIntegrationTest.Setup;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

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

  static Stream<Arguments> cases() {
    return Stream.of(Proxy.values())
        .flatMap(
            p ->
                Stream.of(
                        FaultInjectionIntegrationTest.PARTITION,
                        FaultInjectionIntegrationTest.PAUSE_LEADER)
                    .flatMap(
                        f -> Stream.of(TakeoverMode.values()).map(m -> Arguments.of(p, f, m))));
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
