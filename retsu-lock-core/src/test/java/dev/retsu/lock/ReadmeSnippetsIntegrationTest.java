package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The core snippets of the README and docs/, compiled and run here; {@link DocsSnippetsTest} keeps
 * the pages identical to these regions.
 */
@ExtendWith(PostgresExtension.class)
class ReadmeSnippetsIntegrationTest {

  @Test
  void leaderInThirtyLines(TestDatabase db) throws Exception {
    db.execute(
        "CREATE TABLE IF NOT EXISTS invoices (id int, state text); DELETE FROM invoices;"
            + " INSERT INTO invoices VALUES (1, 'queued'), (2, 'queued'), (3, 'sent')");
    DataSource dataSource = db.dataSource();
    java.io.ByteArrayOutputStream printed = new java.io.ByteArrayOutputStream();
    java.io.PrintStream out = System.out;
    System.setOut(new java.io.PrintStream(printed, true, java.nio.charset.StandardCharsets.UTF_8));
    try {
      // snippet:core/leader
      LeaderLoop loop =
          LeaderLoop.builder(dataSource, LockKey.named("billing", "send-invoices"))
              .refreshInterval(Duration.ofMinutes(1)) // the period, from the end of one run
              .refreshTimeout(Duration.ofMinutes(10)) // a longer run is interrupted; term ends
              .build();
      CompletableFuture<Void> stopped =
          loop.start(
              ctx -> { // on the leader only, every period, on the session that holds the lock
                List<Long> due = new ArrayList<>();
                try (Statement s = ctx.connection().createStatement();
                    ResultSet rs =
                        s.executeQuery("SELECT id FROM invoices WHERE state = 'queued'")) {
                  while (rs.next()) {
                    due.add(rs.getLong(1));
                  }
                }
                for (long id : due) {
                  ctx.ensureLeader(); // right before the effect: throws once this term is over
                  System.out.println(
                      "send invoice " + id + " under fencing token " + ctx.fencingToken());
                }
              });
      stopped.exceptionally(
          failure -> { // the loop gave up (a transaction pooler, say): nobody here contends now
            System.err.println("leader loop failed: " + failure);
            return null;
          });
      Runtime.getRuntime().addShutdownHook(new Thread(loop::close, "send-invoices-shutdown"));
      // end-snippet
      org.awaitility.Awaitility.await()
          .atMost(Duration.ofSeconds(20))
          .until(
              () ->
                  printed
                      .toString(java.nio.charset.StandardCharsets.UTF_8)
                      .contains("send invoice 2"));
      loop.close();
      stopped.get(10, java.util.concurrent.TimeUnit.SECONDS);
      assertThat(loop.state()).isEqualTo(LeaderLoop.State.CLOSED);
    } finally {
      System.setOut(out);
    }
    assertThat(printed.toString(java.nio.charset.StandardCharsets.UTF_8))
        .contains("send invoice 1 under fencing token ")
        .contains("send invoice 2 under fencing token ")
        .doesNotContain("send invoice 3");
  }

  @Test
  void acquire(TestDatabase db) throws SQLException {
    db.execute(
        "CREATE TABLE IF NOT EXISTS invoices (id int, state text); DELETE FROM invoices;"
            + " INSERT INTO invoices VALUES (1, 'new')");
    DataSource dataSource = db.dataSource();
    // snippet:core/acquire
    AdvisoryLock lock =
        AdvisoryLock.builder(dataSource, LockKey.named("billing", "invoice-run"))
            .candidateId("worker-1")
            .build();
    Optional<AdvisoryLockLease> acquired = lock.tryAcquire();
    if (acquired.isPresent()) {
      try (AdvisoryLockLease lease = acquired.get()) {
        // All leader work goes through the lease's own session.
        int rows =
            lease.withConnection(
                c -> {
                  try (Statement s = c.createStatement()) {
                    return s.executeUpdate(
                        "UPDATE invoices SET state = 'queued' WHERE state = 'new'");
                  }
                });
        lease.verify(); // one round trip: alive, same backend, still holds the lock
      } // close() ends the physical session: the lock is released at once, never pooled
    }
    // end-snippet
    assertThat(acquired).isPresent();
    assertThat(db.queryInts("SELECT count(*)::int FROM invoices WHERE state = 'queued'"))
        .containsExactly(1);
  }

  @Test
  void leaderLoop(TestDatabase db) throws Exception {
    db.execute(
        "CREATE TABLE queue_rollup (queue text, ready bigint); INSERT INTO queue_rollup VALUES ('q', 3)");
    DataSource dataSource = db.dataSource();
    // snippet:core/leader-loop
    LeaderLoop loop =
        LeaderLoop.builder(dataSource, LockKey.of(4242, 1))
            .candidateId("collector-a")
            .failurePolicy(FailurePolicy.EXIT)
            .listener(
                new LeaderListener() {
                  @Override
                  public void onAcquired(Term term) {
                    System.out.println("leadership acquired, fencing token " + term.fencingToken());
                  }
                })
            .build();
    CompletableFuture<Void> done =
        loop.start(
            ctx -> {
              long ready;
              try (Statement s = ctx.connection().createStatement();
                  ResultSet rs = s.executeQuery("SELECT sum(ready) FROM queue_rollup")) {
                rs.next();
                ready = rs.getLong(1);
              }
              ctx.ensureLeader(); // before any side effect outside the database
              System.out.println("ready=" + ready + " token=" + ctx.fencingToken());
            });
    // end-snippet
    org.awaitility.Awaitility.await()
        .atMost(java.time.Duration.ofSeconds(20))
        .until(loop::isLeader);
    // snippet:core/leader-loop-close
    // ... on shutdown:
    loop.close(); // stops the refresh, tells listeners, then releases the lock; done completes
    // end-snippet
    done.get(10, java.util.concurrent.TimeUnit.SECONDS);
    assertThat(loop.state()).isEqualTo(LeaderLoop.State.CLOSED);
  }

  @Test
  void waitMode(TestDatabase db) {
    DataSource dataSource = db.dataSource();
    // snippet:core/wait-mode
    LeaderLoop waiting =
        LeaderLoop.builder(dataSource, LockKey.named("billing", "send-invoices"))
            .takeover(TakeoverMode.WAIT)
            .waitTimeout(Duration.ofSeconds(60)) // the default; see below
            .build();
    // end-snippet
    waiting.start(ctx -> {});
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(20)).until(waiting::isLeader);
    waiting.close();
  }

  @Test
  void holder(TestDatabase db) {
    AdvisoryLock lock = AdvisoryLock.of(db.dataSource(), LockKey.of(77L));
    try (AdvisoryLockLease held = lock.tryAcquire().orElseThrow()) {
      // snippet:core/holder
      lock.currentHolder()
          .ifPresent(h -> System.out.println("held by pid " + h.pid() + " " + h.candidateId()));
      // end-snippet
      assertThat(lock.currentHolder()).map(LeaderInfo::pid).contains(held.backendPid());
    }
  }

  @Test
  void whoLeadsHandOverAndFencedWrites(TestDatabase db) throws Exception {
    db.execute(
        "CREATE TABLE IF NOT EXISTS invoices (id int, state text); DELETE FROM invoices;"
            + " INSERT INTO invoices VALUES (1, 'queued')");
    DataSource dataSource = db.dataSource();
    java.util.List<LeaderChange> heard = new java.util.concurrent.CopyOnWriteArrayList<>();
    LeaderLoop loop =
        LeaderLoop.builder(dataSource, LockKey.named("billing", "send-invoices"))
            .candidateId("billing-v1")
            .takeover(TakeoverMode.WAIT)
            .refreshInterval(Duration.ofMillis(100))
            .build();
    loop.start(ctx -> ctx.ensureLeader());
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(20)).until(loop::isLeader);
    // snippet:core/watch
    LeaderWatch watch = LeaderWatch.open(dataSource); // one per process: every key, one session
    watch.watch(
        LockKey.named("billing", "send-invoices"),
        change ->
            System.out.println(
                change.cause()
                    + ": "
                    + change
                        .leader()
                        .map(
                            i ->
                                i.candidateId() + " (pid " + i.pid() + ", token " + i.token() + ")")
                        .orElse("nobody leads")));
    // end-snippet
    watch.watch(LockKey.named("billing", "send-invoices"), heard::add);
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> !heard.isEmpty());
    assertThat(heard.get(0).leader().map(LeaderInfo::candidateId)).contains("billing-v1");

    // snippet:core/fenced-write
    LockKey key = LockKey.named("billing", "send-invoices");
    FencingToken token = loop.currentTerm().orElseThrow().fencingToken(); // as the leader passed it
    int changed;
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "UPDATE invoices SET state = 'sent' WHERE id = ? AND "
                    + FencingSql.isCurrent(key, token))) {
      ps.setLong(1, 1);
      changed = ps.executeUpdate(); // 0 once the term that took this token is over
    }
    // end-snippet
    assertThat(changed).isEqualTo(1);

    // snippet:core/rolling-deploy
    // The new instance is preferred: the old leader hands over at its next refresh.
    LeaderLoop next =
        LeaderLoop.builder(dataSource, LockKey.named("billing", "send-invoices"))
            .candidateId("billing-v2")
            .preferred(true)
            .build();
    next.start(ctx -> ctx.ensureLeader());
    // end-snippet
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(20)).until(next::isLeader);
    assertThat(loop.isLeader()).isFalse();
    // snippet:core/yield
    boolean handedOver = next.yield(Duration.ofMinutes(1)); // stays a candidate, out for a minute
    // end-snippet
    assertThat(handedOver).isTrue();
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(20)).until(loop::isLeader);
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "UPDATE invoices SET state = 'again' WHERE id = 1 AND "
                    + FencingSql.isCurrent(key, token))) {
      assertThat(ps.executeUpdate()).as("the stale token").isZero();
    }
    next.close();
    loop.close();
    watch.close();
  }
}
