package dev.retsu.lock.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.AdvisoryLock;
import dev.retsu.lock.AdvisoryLockLease;
import dev.retsu.lock.AttemptResult;
import dev.retsu.lock.FailurePolicy;
import dev.retsu.lock.LeaderGroup;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.TakeoverMode;
import dev.retsu.lock.Term;
import dev.retsu.lock.testing.EmbeddedPostgresServer;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLWarning;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A synchronous cluster whose standby is down (DESIGN invariant 10): {@code
 * synchronous_standby_names} names a standby that never connects, so every commit that waits for it
 * hangs in {@code SyncRep}, as an ordinary write is shown to first. Elections and hand-overs still
 * happen within one attempt, because no statement of a term, an election or a hand-over commits
 * anything that waits for a standby. The server is this class's own: {@code ALTER SYSTEM} changes a
 * whole server, and no other test may see it.
 */
class SyncStandbyDownIntegrationTest {

  /** Far below what a stuck election would take: it never ends while the standby is away. */
  private static final Duration ELECTS_WITHIN = Duration.ofSeconds(10);

  private static final AtomicInteger NAMES = new AtomicInteger();
  private static EmbeddedPostgresServer server;
  private static PGSimpleDataSource ds;
  private final List<AutoCloseable> open = new ArrayList<>();

  @BeforeAll
  static void startAServerWhoseSynchronousStandbyIsAbsent() throws Exception {
    server = EmbeddedPostgresServer.startDefault();
    ds = new PGSimpleDataSource();
    ds.setUrl(server.jdbcUrl("postgres"));
    ds.setUser(server.user());
    ds.setPassword(server.password());
    ds.setConnectTimeout(2);
    try (Connection c = server.connect("postgres");
        Statement s = c.createStatement()) {
      s.execute("ALTER SYSTEM SET synchronous_standby_names = 'absent_standby'");
      s.execute("SELECT pg_catalog.pg_reload_conf()");
    }
    // The setup proves itself: an ordinary write waits for the absent standby. The reload reaches
    // every process a moment later, so a write that committed meanwhile is tried again.
    await().atMost(Duration.ofSeconds(30)).until(SyncStandbyDownIntegrationTest::aWriteWaits);
  }

  @AfterAll
  static void restoreAndStop() throws Exception {
    if (server == null) {
      return;
    }
    try (Connection c = server.connect("postgres");
        Statement s = c.createStatement()) {
      s.execute("ALTER SYSTEM RESET synchronous_standby_names");
      s.execute("SELECT pg_catalog.pg_reload_conf()");
    } finally {
      server.close();
    }
  }

  @AfterEach
  void closeAll() throws Exception {
    for (int i = open.size() - 1; i >= 0; i--) {
      open.get(i).close();
    }
  }

  /**
   * Runs one {@code CREATE TABLE} and returns whether its commit waited in {@code SyncRep}; if so,
   * cancels that wait (the server then warns that the transaction committed locally only: a
   * statement_timeout does not cover the commit's wait, which is why the cancel comes from another
   * session). False: the write committed before the reload took effect.
   */
  private static boolean aWriteWaits() throws Exception {
    try (Connection writer = server.connect("postgres");
        Connection observer = server.connect("postgres")) {
      int pid = pid(writer);
      CompletableFuture<SQLWarning> write =
          CompletableFuture.supplyAsync(
              () -> {
                try (Statement s = writer.createStatement()) {
                  s.execute("CREATE TABLE sync_probe_" + NAMES.incrementAndGet() + " (i int)");
                  return s.getWarnings();
                } catch (SQLException e) {
                  throw new IllegalStateException(e);
                }
              });
      await()
          .atMost(Duration.ofSeconds(5))
          .until(() -> write.isDone() || waitEvent(observer, pid).equals(Optional.of("SyncRep")));
      if (write.isDone()) {
        assertThat(Optional.ofNullable(write.join())).as("a write that did not wait").isEmpty();
        return false;
      }
      try (PreparedStatement ps =
          observer.prepareStatement("SELECT pg_catalog.pg_cancel_backend(?)")) {
        ps.setInt(1, pid);
        ps.execute();
      }
      SQLWarning warning = write.get(10, TimeUnit.SECONDS);
      assertThat((Throwable) warning)
          .as("the write's warning once its wait was cancelled")
          .hasMessageContaining("canceling wait for synchronous replication");
      return true;
    }
  }

  private static int pid(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT pg_catalog.pg_backend_pid()")) {
      rs.next();
      return rs.getInt(1);
    }
  }

  private static Optional<String> waitEvent(Connection c, int pid) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement("SELECT wait_event FROM pg_catalog.pg_stat_activity WHERE pid = ?")) {
      ps.setInt(1, pid);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Optional.ofNullable(rs.getString(1)) : Optional.empty();
      }
    }
  }

  private static LockKey key() {
    return LockKey.named("retsu-test", "sync-standby-down-" + NAMES.incrementAndGet());
  }

  /** What one loop's listener heard: every attempt's result, every term. */
  private static final class Heard implements LeaderListener {
    final List<AttemptResult> attempts = new CopyOnWriteArrayList<>();
    final List<Term> terms = new CopyOnWriteArrayList<>();

    @Override
    public void onAttempt(AttemptResult result, Duration duration, Throwable error) {
      attempts.add(result);
    }

    @Override
    public void onAcquired(Term term) {
      terms.add(term);
    }
  }

  private LeaderLoop loop(LockKey key, String id, TakeoverMode mode, Heard heard) {
    LeaderLoop loop =
        FaultTiming.fast(LeaderLoop.builder(ds, key))
            .candidateId(id)
            .takeover(mode)
            .failurePolicy(FailurePolicy.STEP_DOWN)
            .listener(heard)
            .build();
    open.add(loop);
    loop.start(ctx -> ctx.ensureLeader());
    return loop;
  }

  private void electsWithinOneAttempt(TakeoverMode mode) {
    Heard heard = new Heard();
    LeaderLoop loop = loop(key(), "only-" + mode, mode, heard);

    await().atMost(ELECTS_WITHIN).until(loop::isLeader);
    assertThat(heard.attempts).first().isEqualTo(AttemptResult.ACQUIRED);
    assertThat(heard.terms).hasSize(1);
  }

  @Test
  void aWaitLoopElectsWithinOneAttemptWhileTheSynchronousStandbyIsDown() {
    electsWithinOneAttempt(TakeoverMode.WAIT);
  }

  @Test
  void aPollLoopElectsWithinOneAttemptWhileTheSynchronousStandbyIsDown() {
    electsWithinOneAttempt(TakeoverMode.POLL);
  }

  @Test
  void aWaitStandbyTakesOverWhileTheSynchronousStandbyIsDown() {
    LockKey key = key();
    Heard first = new Heard();
    LeaderLoop a = loop(key, "wait-a", TakeoverMode.WAIT, first);
    await().atMost(ELECTS_WITHIN).until(a::isLeader);
    Heard second = new Heard();
    LeaderLoop b = loop(key, "wait-b", TakeoverMode.WAIT, second);
    // b waits on the key in the server's lock queue
    await().atMost(ELECTS_WITHIN).until(() -> waiting(key) == 1);
    Term before = a.currentTerm().orElseThrow();

    a.close();
    await().atMost(ELECTS_WITHIN).until(b::isLeader);
    assertThat(second.attempts).doesNotContain(AttemptResult.ERROR);
    assertThat(second.terms).hasSize(1);
    assertThat(second.terms.get(0).fencingToken().isNewerThan(before.fencingToken())).isTrue();
  }

  private static int waiting(LockKey key) throws SQLException {
    try (Connection c = server.connect("postgres");
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT pg_catalog.count(*)::int FROM pg_catalog.pg_locks WHERE locktype ="
                    + " 'advisory' AND NOT granted AND objsubid = 1"
                    + " AND classid = ((?::int8 >> 32) & 4294967295)::oid"
                    + " AND objid = (?::int8 & 4294967295)::oid")) {
      ps.setLong(1, key.value());
      ps.setLong(2, key.value());
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    }
  }

  private static AdvisoryLock lock() {
    return AdvisoryLock.builder(ds, key()).roundTripTimeout(Duration.ofSeconds(2)).build();
  }

  @Test
  void anAdvisoryLockIsTakenAndWaitedForWhileTheSynchronousStandbyIsDown() {
    AdvisoryLock tried = lock();
    try (AdvisoryLockLease lease = tried.tryAcquire().orElseThrow()) {
      assertThat(lease.isHeld()).isTrue();
    }
    AdvisoryLock waited = lock();
    try (AdvisoryLockLease lease = waited.acquire(ELECTS_WITHIN).orElseThrow()) {
      assertThat(lease.isHeld()).isTrue();
    }
  }

  @Test
  void aGroupTakesEveryKeyWhileTheSynchronousStandbyIsDown() {
    String ns = "sync-down-group-" + NAMES.incrementAndGet();
    LeaderGroup g =
        FaultTiming.fast(LeaderGroup.partitioned(ds, ns, 4)).candidateId("member").build();
    open.add(g);
    g.start(ctx -> ctx.ensureLeader());

    await().atMost(ELECTS_WITHIN).until(() -> g.heldCount() == 4);
    assertThat(g.losses()).isZero();
  }
}
