package dev.retsu.lock.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.FencingToken;
import dev.retsu.lock.LeaderChange;
import dev.retsu.lock.LeaderInfo;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LeaderWatch;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.Term;
import dev.retsu.lock.testing.EmbeddedPostgresServer;
import dev.retsu.lock.testing.PostgresServer.ShutdownMode;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A server restart under a {@link LeaderWatch}: its session is lost, it opens a new one and reads
 * its keys again ({@link LeaderChange.Cause#READ}), and what it delivers stays in token order with
 * no leader twice in a row, across the restart.
 */
class LeaderWatchRestartIntegrationTest {

  private static final Duration WITHIN = Duration.ofSeconds(60);
  private EmbeddedPostgresServer server;
  private LeaderWatch watch;
  private LeaderLoop loop;

  @BeforeEach
  void startServer() {
    server = EmbeddedPostgresServer.startDefault();
  }

  @AfterEach
  void stopAll() {
    if (loop != null) {
      loop.close();
    }
    if (watch != null) {
      watch.close();
    }
    server.close();
  }

  @Test
  void afterAServerRestartTheWatchReadsItsKeysAgainAndKeepsTheOrder() {
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setUrl(server.jdbcUrl("postgres"));
    ds.setUser(server.user());
    ds.setPassword(server.password());
    ds.setConnectTimeout(2);
    LockKey key = LockKey.named("retsu-test", "watch-restart");
    watch =
        LeaderWatch.builder(ds).name("restart").reconnectInterval(Duration.ofMillis(200)).open();
    List<LeaderChange> heard = new CopyOnWriteArrayList<>();
    watch.watch(key, heard::add);
    List<Term> terms = new CopyOnWriteArrayList<>();
    loop =
        FaultTiming.fast(LeaderLoop.builder(ds, key))
            .candidateId("restarted")
            .failFast(false)
            .listener(
                new dev.retsu.lock.LeaderListener() {
                  @Override
                  public void onAcquired(Term term) {
                    terms.add(term);
                  }
                })
            .build();
    loop.start(ctx -> ctx.ensureLeader());
    await().atMost(WITHIN).until(() -> watch.leader(key).isPresent());

    server.stop(ShutdownMode.FAST);
    await().atMost(WITHIN).until(() -> !watch.isConnected());
    server.start();
    await().atMost(WITHIN).until(() -> terms.size() >= 2 && watch.isConnected());
    FencingToken second = terms.get(terms.size() - 1).fencingToken();
    await()
        .atMost(WITHIN)
        .until(() -> watch.leader(key).flatMap(LeaderInfo::token).equals(Optional.of(second)));

    FencingToken last = null;
    LeaderChange previous = null;
    for (LeaderChange c : heard) {
      if (previous != null) {
        assertThat(identity(c)).as("no leader twice in a row").isNotEqualTo(identity(previous));
      }
      previous = c;
      Optional<FencingToken> t = c.leader().flatMap(LeaderInfo::token);
      if (t.isPresent()) {
        if (last != null) {
          assertThat(t.get().isNewerThan(last)).isTrue();
        }
        last = t.get();
      }
    }
    assertThat(heard.get(0).cause()).isEqualTo(LeaderChange.Cause.READ);
  }

  private static Optional<String> identity(LeaderChange c) {
    return c.leader().map(i -> i.pid() + " " + i.token());
  }
}
