package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * The server-facing contract of the library, run against each PostgreSQL version we claim: the SQL
 * we send, the settings we rely on, the SQLStates we map.
 */
abstract class ServerContractTests {

  /** A data source on the server under test; each call gives a fresh, non-pooling one. */
  abstract DataSource dataSource();

  /** Terminates a backend as an operator would. */
  abstract void terminate(int pid) throws Exception;

  @Test
  void exclusiveAcquireVerifyAndReleaseOnBothKeyspaces() {
    for (LockKey key : List.of(LockKey.of(-5L), LockKey.of(7, -9), LockKey.named("v", "k"))) {
      AdvisoryLockLease lease = AdvisoryLock.of(dataSource(), key).tryAcquire().orElseThrow();
      assertThat(AdvisoryLock.of(dataSource(), key).tryAcquire()).isEmpty();
      lease.verify();
      assertThat(AdvisoryLock.of(dataSource(), key).currentHolder().orElseThrow().pid())
          .isEqualTo(lease.backendPid());
      lease.close();
      await()
          .atMost(Duration.ofSeconds(10))
          .until(() -> AdvisoryLock.of(dataSource(), key).currentHolder().isEmpty());
    }
  }

  @Test
  void leaderSessionSettingsAreAllAccepted() throws Exception {
    LeaderLoop loop =
        LeaderLoop.builder(dataSource(), LockKey.of(31L)).candidateId("settings").build();
    List<String> applied = new CopyOnWriteArrayList<>();
    CompletableFuture<Void> run =
        loop.start(
            ctx ->
                ctx.withConnection(
                    c -> {
                      try (Statement s = c.createStatement();
                          ResultSet rs =
                              s.executeQuery(
                                  "SELECT current_setting('idle_session_timeout'),"
                                      + " current_setting('client_connection_check_interval'),"
                                      + " current_setting('tcp_user_timeout')")) {
                        rs.next();
                        applied.add(
                            rs.getString(1) + "/" + rs.getString(2) + "/" + rs.getString(3));
                        return null;
                      }
                    }));
    await().atMost(Duration.ofSeconds(20)).until(() -> !applied.isEmpty());
    loop.close();
    run.get(10, TimeUnit.SECONDS);
    assertThat(applied.get(0)).isEqualTo("11s/2s/11000"); // tcp_user_timeout shows in ms
  }

  @Test
  void fencingTokensIncreaseAndTerminationMapsTo57P01() throws Exception {
    LockKey key = LockKey.of(32L);
    List<Term> terms = new CopyOnWriteArrayList<>();
    LeaderLoop loop =
        LeaderLoop.builder(dataSource(), key)
            .candidateId("contract")
            .failurePolicy(FailurePolicy.EXIT)
            .refreshInterval(Duration.ofHours(1))
            .listener(
                new LeaderListener() {
                  @Override
                  public void onAcquired(Term term) {
                    terms.add(term);
                  }
                })
            .build();
    CompletableFuture<Void> run = loop.start(ctx -> {});
    await().atMost(Duration.ofSeconds(20)).until(() -> terms.size() == 1);
    terminate(terms.get(0).backendPid());
    assertThatThrownBy(() -> run.get(20, TimeUnit.SECONDS))
        .cause()
        .isInstanceOfSatisfying(
            LeadershipLostException.class, e -> assertThat(e.sqlState()).contains("57P01"));
    try (AdvisoryLockLease next = AdvisoryLock.of(dataSource(), key).tryAcquire().orElseThrow();
        Connection c = dataSource().getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT pg_current_xact_id()::text::bigint")) {
      rs.next();
      assertThat(rs.getLong(1)).isGreaterThan(terms.get(0).fencingToken().xid());
      assertThat(next.isHeld()).isTrue();
    }
  }
}
