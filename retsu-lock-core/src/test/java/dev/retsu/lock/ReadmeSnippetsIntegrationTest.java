package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.ReadmeSnippets;
import dev.retsu.lock.testing.TestDatabase;
import java.nio.file.Path;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The README's core snippets, compiled and run here; the first test keeps them identical. */
@ExtendWith(PostgresExtension.class)
class ReadmeSnippetsIntegrationTest {

  @Test
  void readmeShowsExactlyTheCodeTestedHere() {
    assertThat(
            ReadmeSnippets.verify(
                Path.of("../README.md"),
                "core",
                Path.of("src/test/java/dev/retsu/lock/ReadmeSnippetsIntegrationTest.java")))
        .contains("core/acquire", "core/holder", "core/leader-loop", "core/wait-mode");
    assertThat(ReadmeSnippets.unmarkedJavaBlocks(Path.of("../README.md")))
        .as("java blocks in the README without a snippet marker (and so without a test)")
        .isZero();
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
  void periodicJob(TestDatabase db) throws Exception {
    db.execute(
        "CREATE TABLE IF NOT EXISTS invoices (id int, state text); DELETE FROM invoices;"
            + " INSERT INTO invoices VALUES (1, 'queued')");
    DataSource dataSource = db.dataSource();
    java.util.concurrent.atomic.AtomicReference<Throwable> stopped =
        new java.util.concurrent.atomic.AtomicReference<>();
    // snippet:core/periodic-job
    LeaderLoop job =
        LeaderLoop.builder(dataSource, LockKey.named("billing", "send-invoices"))
            .refreshInterval(Duration.ofMinutes(1)) // the period, from the end of one run
            .refreshTimeout(Duration.ofMinutes(10)) // a longer run is interrupted; term ends
            .build(); // STEP_DOWN: a run that throws ends the term; contend again after a backoff
    CompletableFuture<Void> running =
        job.start(
            ctx -> {
              try (PreparedStatement ps =
                  ctx.connection()
                      .prepareStatement(
                          "UPDATE invoices SET state = 'sent' WHERE state = 'queued'")) {
                ctx.ensureLeader(); // right before the effect
                ps.executeUpdate();
              }
            });
    running.whenComplete((ok, failure) -> stopped.set(failure)); // e.g. mark the service unhealthy
    Runtime.getRuntime().addShutdownHook(new Thread(job::close, "send-invoices-shutdown"));
    // end-snippet
    org.awaitility.Awaitility.await()
        .atMost(Duration.ofSeconds(20))
        .until(
            () ->
                db.queryInts("SELECT count(*)::int FROM invoices WHERE state = 'sent'").get(0)
                    == 1);
    job.close();
    running.get(10, java.util.concurrent.TimeUnit.SECONDS);
    assertThat(stopped.get()).isNull();
    assertThat(job.state()).isEqualTo(LeaderLoop.State.CLOSED);
  }

  @Test
  void waitMode(TestDatabase db) {
    DataSource dataSource = db.dataSource();
    LockKey key = LockKey.of(4243L);
    // snippet:core/wait-mode
    LeaderLoop waiting =
        LeaderLoop.builder(dataSource, key)
            .takeover(TakeoverMode.WAIT)
            .waitTimeout(Duration.ofMinutes(5)) // the default; see below
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
          .ifPresent(
              h ->
                  System.out.println("held by pid " + h.pid() + " " + h.candidateId().orElse("?")));
      // end-snippet
      assertThat(lock.currentHolder()).map(LockHolder::pid).contains(held.backendPid());
    }
  }
}
