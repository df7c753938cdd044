package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.fakes.StderrCapture;
import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.fakes.TestLoops;
import dev.retsu.lock.testing.FaultProxy;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * {@link ServerPath}: a session whose server sees this process's own socket is {@link
 * ServerPath#DIRECT}, whatever name the URL gives the server; one through a TCP proxy is {@link
 * ServerPath#PROXIED}, and a loop says so at WARN once for the session, naming the bound that still
 * applies. The proxies of the fault suite (PgBouncer in session mode, HAProxy) are in {@code
 * ProxiedFaultIntegrationTest}.
 */
@ExtendWith(PostgresExtension.class)
class ServerPathIntegrationTest {

  private static final Duration WITHIN = Duration.ofSeconds(30);

  private static PGSimpleDataSource source(TestDatabase db, String url) {
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setUrl(url);
    ds.setUser(db.user());
    ds.setPassword(db.password());
    return ds;
  }

  /** The URL with its host replaced, e.g. by {@code localhost}. */
  private static String withHost(TestDatabase db, String host) {
    return db.jdbcUrl()
        .replaceFirst("^jdbc:postgresql://[^:/]+:", "jdbc:postgresql://" + host + ":");
  }

  @Test
  void aDirectSessionIsDirectWhetherTheUrlSaysLocalhostOrAnAddress(TestDatabase db) {
    Assumptions.assumeTrue(
        db.jdbcUrl().startsWith("jdbc:postgresql://127.0.0.1:")
            || db.jdbcUrl().startsWith("jdbc:postgresql://localhost:"),
        "needs a server on this machine's loopback, but the URL is " + db.jdbcUrl());
    for (String host : List.of("127.0.0.1", "localhost")) {
      try (AdvisoryLockLease lease =
          AdvisoryLock.of(source(db, withHost(db, host)), TestKeys.next())
              .tryAcquire()
              .orElseThrow()) {
        assertThat(lease.serverPath()).as("through %s", host).isEqualTo(ServerPath.DIRECT);
      }
    }
  }

  @Test
  void aSessionThroughATcpProxyIsProxied(TestDatabase db) {
    try (FaultProxy proxy = FaultProxy.inFrontOf(db.jdbcUrl());
        AdvisoryLockLease lease =
            AdvisoryLock.of(source(db, proxy.rewrite(db.jdbcUrl())), TestKeys.next())
                .tryAcquire()
                .orElseThrow()) {
      assertThat(lease.serverPath()).isEqualTo(ServerPath.PROXIED);
    }
  }

  /**
   * A loop through a proxy logs one WARN for its session that names what still bounds a vanished
   * leader there (idle_session_timeout and self-fencing, with their values); a direct loop logs
   * none. Both terms carry their path.
   */
  @Test
  void aLoopThroughAProxyWarnsOnceNamingTheBoundThatApplies(TestDatabase db) throws Exception {
    try (FaultProxy proxy = FaultProxy.inFrontOf(db.jdbcUrl())) {
      List<String> proxiedLines =
          warnings(
              () ->
                  TestLoops.fast(
                          LeaderLoop.builder(
                              source(db, proxy.rewrite(db.jdbcUrl())), TestKeys.next()))
                      .candidateId("behind-proxy")
                      .build(),
              ServerPath.PROXIED);
      assertThat(proxiedLines)
          .singleElement()
          .satisfies(
              line ->
                  assertThat(line)
                      .contains("candidate=behind-proxy")
                      .contains("Session through a proxy or pooler")
                      .contains("127.0.0.1:" + proxy.port())
                      .contains("only idle_session_timeout (4s) and self-fencing (2s)"));
    }
    List<String> directLines =
        warnings(
            () ->
                TestLoops.fast(LeaderLoop.builder(db.dataSource(), TestKeys.next()))
                    .candidateId("direct")
                    .build(),
            ServerPath.DIRECT);
    assertThat(directLines).isEmpty();
  }

  /**
   * Runs a loop until it has led for a few refreshes, capturing what it logs about proxies, and
   * checks its term's path.
   */
  private static List<String> warnings(Supplier<LeaderLoop> build, ServerPath expected)
      throws Exception {
    String out =
        StderrCapture.during(
            () -> {
              AtomicInteger refreshes = new AtomicInteger();
              LeaderLoop loop = build.get();
              try {
                CompletableFuture<Void> run = loop.start(ctx -> refreshes.incrementAndGet());
                // Several refreshes and heartbeats of one term: none of them may warn again.
                await().atMost(WITHIN).until(() -> refreshes.get() >= 4);
                assertThat(loop.currentTerm().orElseThrow().serverPath()).isEqualTo(expected);
                loop.close();
                run.get(WITHIN.toSeconds(), TimeUnit.SECONDS);
              } finally {
                loop.close();
              }
            });
    return Arrays.stream(out.split("\n"))
        .filter(l -> l.contains("WARN") && l.contains("proxy"))
        .collect(Collectors.toList());
  }
}
