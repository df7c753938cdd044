package dev.retsu.lock.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.FailurePolicy;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.TakeoverMode;
import dev.retsu.lock.Term;
import dev.retsu.lock.UnsafeSessionException;
import dev.retsu.lock.testing.EmbeddedPostgresServer;
import dev.retsu.lock.testing.PostgresServer.ShutdownMode;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Scenario 7: a streaming replica. A candidate pointed at the standby refuses to lead; after the
 * primary dies and the standby is promoted, candidates re-elect on the new primary and the fencing
 * token still increases, because the new primary runs on a higher timeline.
 */
class ReplicaFailoverIntegrationTest {

  private static final Duration WITHIN = Duration.ofSeconds(60);
  private EmbeddedPostgresServer primary;
  private EmbeddedPostgresServer standby;
  private final List<LeaderLoop> loops = new ArrayList<>();

  @BeforeEach
  void startPair() {
    primary = EmbeddedPostgresServer.startDefault();
    standby = primary.startStreamingReplica();
  }

  @AfterEach
  void stopAll() {
    loops.forEach(LeaderLoop::close);
    standby.close();
    primary.close();
  }

  private LeaderLoop loop(String url, String id, RecordingTerms terms) {
    return loop(url, id, terms, TakeoverMode.POLL);
  }

  private LeaderLoop loop(String url, String id, RecordingTerms terms, TakeoverMode mode) {
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setUrl(url);
    ds.setUser("postgres");
    ds.setConnectTimeout(2);
    LeaderLoop loop =
        FaultTiming.fast(LeaderLoop.builder(ds, LockKey.named("retsu-test", "replica")))
            .candidateId(id)
            .failurePolicy(FailurePolicy.STEP_DOWN)
            .takeover(mode)
            .listener(terms)
            .build();
    loops.add(loop);
    return loop;
  }

  /** Collects terms and reasons. */
  static final class RecordingTerms implements dev.retsu.lock.LeaderListener {
    final List<Term> acquired = new CopyOnWriteArrayList<>();
    final List<LossReason> lost = new CopyOnWriteArrayList<>();

    @Override
    public void onAcquired(Term term) {
      acquired.add(term);
    }

    @Override
    public void onLost(Term term, LossReason reason, Throwable cause) {
      lost.add(reason);
    }
  }

  /**
   * The same failover with WAIT standbys: their terms take the token in the statement that waits,
   * and it still increases across the promotion.
   */
  @ParameterizedTest
  @EnumSource(TakeoverMode.class)
  void standbyCandidateRefusesAndCandidatesReElectOnThePromotedPrimary(TakeoverMode mode)
      throws Exception {
    LeaderLoop onStandby = loop(standby.jdbcUrl("postgres"), "on-standby", new RecordingTerms());
    assertThatThrownBy(() -> onStandby.run(ctx -> {}))
        .isInstanceOfSatisfying(
            UnsafeSessionException.class,
            e -> assertThat(e.reason()).isEqualTo(LossReason.HOT_STANDBY_DETECTED));

    // Both hosts, primary preferred: what a deployment with failover would configure.
    String both =
        "jdbc:postgresql://127.0.0.1:"
            + primary.port()
            + ",127.0.0.1:"
            + standby.port()
            + "/postgres?targetServerType=primary";
    RecordingTerms a = new RecordingTerms();
    RecordingTerms b = new RecordingTerms();
    loop(both, "a", a, mode).start(ctx -> {});
    loop(both, "b", b, mode).start(ctx -> {});
    await().atMost(WITHIN).until(() -> a.acquired.size() + b.acquired.size() == 1);
    Term before = a.acquired.isEmpty() ? b.acquired.get(0) : a.acquired.get(0);
    assertThat(before.fencingToken().timeline()).isEqualTo(1);

    primary.stop(ShutdownMode.IMMEDIATE); // the primary dies
    try (Connection c = standby.connect("postgres");
        Statement s = c.createStatement()) {
      s.execute("SELECT pg_promote(true, 60)");
    }

    await().atMost(WITHIN).until(() -> a.acquired.size() + b.acquired.size() >= 2);
    List<Term> all = new ArrayList<>(a.acquired);
    all.addAll(b.acquired);
    all.sort(java.util.Comparator.comparing(Term::start));
    Term after = all.get(all.size() - 1);
    assertThat(after.fencingToken().timeline()).isEqualTo(2);
    assertThat(after.fencingToken().isNewerThan(before.fencingToken())).isTrue();
    assertThat(a.lost).doesNotContain(LossReason.HOT_STANDBY_DETECTED);
  }

  @org.junit.jupiter.api.Test
  void theSqlTokenCheckRejectsTheOldLeadersTokenOnThePromotedReplica() throws Exception {
    String both =
        "jdbc:postgresql://127.0.0.1:"
            + primary.port()
            + ",127.0.0.1:"
            + standby.port()
            + "/postgres?targetServerType=primary";
    RecordingTerms a = new RecordingTerms();
    loop(both, "sql-check", a, TakeoverMode.WAIT).start(ctx -> {});
    await().atMost(WITHIN).until(() -> a.acquired.size() == 1);
    LockKey key = LockKey.named("retsu-test", "replica");
    dev.retsu.lock.FencingToken old = a.acquired.get(0).fencingToken();
    try (Connection c = primary.connect("postgres");
        Statement s = c.createStatement();
        java.sql.ResultSet rs =
            s.executeQuery("SELECT " + dev.retsu.lock.FencingSql.isCurrent(key, old))) {
      rs.next();
      assertThat(rs.getBoolean(1)).as("current on the primary").isTrue();
    }

    primary.stop(ShutdownMode.IMMEDIATE); // the primary dies; the replica is promoted
    try (Connection c = standby.connect("postgres");
        Statement s = c.createStatement()) {
      s.execute("SELECT pg_promote(true, 60)");
    }
    await().atMost(WITHIN).until(() -> a.acquired.size() >= 2);
    dev.retsu.lock.FencingToken now = a.acquired.get(a.acquired.size() - 1).fencingToken();
    try (Connection c = standby.connect("postgres");
        Statement s = c.createStatement();
        java.sql.ResultSet rs =
            s.executeQuery(
                "SELECT "
                    + dev.retsu.lock.FencingSql.isCurrent(key, old)
                    + ", "
                    + dev.retsu.lock.FencingSql.isCurrent(key, now))) {
      rs.next();
      assertThat(rs.getBoolean(1)).as("the stale token after the failover").isFalse();
      assertThat(rs.getBoolean(2)).as("the new term's token").isTrue();
    }
  }
}
