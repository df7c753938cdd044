package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.testing.ChildJvm;
import dev.retsu.lock.testing.DocsSql;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
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

  private static final Path README = Path.of("../README.md");

  /**
   * The README's first program, pasted into a {@code main} ({@link SendInvoices}) and run as a
   * program in a JVM of its own against the README's table: it leads, runs the task, keeps running
   * until it is stopped, and on SIGTERM (as Ctrl-C) closes the loop and releases the lock.
   */
  @Test
  void theLeaderInThirtyLinesRunsAsAProgramUntilItIsStopped(TestDatabase db) throws Exception {
    createInvoices(db, README);
    for (String statement : DocsSql.statements(README)) {
      if (statement.startsWith("INSERT INTO invoices")) {
        db.execute(statement);
      }
    }
    try (ChildJvm program =
        new ChildJvm(
            "send-invoices",
            new ProcessBuilder(
                ChildJvm.javaCommand(
                    List.of("-Xmx64m"),
                    SendInvoices.class,
                    List.of(db.jdbcUrl(), db.user(), db.password())))) {}) {
      org.awaitility.Awaitility.await()
          .atMost(Duration.ofSeconds(30))
          .failFast("the program ended before it ran the task", () -> !program.process.isAlive())
          .until(() -> program.logged("send invoice 2 under fencing token "));
      assertThat(program.process.isAlive()).as("the program keeps running after a run").isTrue();
      long key = LockKey.named("billing", "send-invoices").value();
      assertThat(db.advisoryKeyHolders(key)).as("it still holds the lock").hasSize(1);
      program.sigterm();
      org.awaitility.Awaitility.await()
          .atMost(Duration.ofSeconds(20))
          .until(program::exitedAndDrained);
      assertThat(program.lines())
          .anyMatch(l -> l.startsWith("send invoice 1 under fencing token "))
          .noneMatch(l -> l.contains("send invoice 3"))
          .noneMatch(l -> l.contains("Exception"))
          .as("the shutdown hook closed the loop")
          .anyMatch(l -> l.contains("Leadership released (CLOSED)"));
    }
  }

  @Test
  void acquire(TestDatabase db) throws SQLException {
    createInvoices(db, Path.of("../docs/lease.md"));
    db.execute("INSERT INTO invoices VALUES (1, 'new')");
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
    db.execute(DocsSql.createTable(Path.of("../docs/leader-loop.md"), "queue_rollup"));
    db.execute("INSERT INTO queue_rollup VALUES ('q', 3)");
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
    createInvoices(db, Path.of("../docs/leader-loop.md"));
    db.execute("INSERT INTO invoices VALUES (1, 'queued')");
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

  /** The invoices table as the page creates it: a reader runs that DDL, then the page's code. */
  private static void createInvoices(TestDatabase db, Path page) throws SQLException {
    db.execute("DROP TABLE IF EXISTS invoices");
    db.execute(DocsSql.createTable(page, "invoices"));
  }
}
