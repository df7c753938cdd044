package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.ReadmeSnippets;
import dev.retsu.lock.testing.TestDatabase;
import java.nio.file.Path;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Optional;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The README's core snippets, compiled and run here; the first test keeps them identical. */
@ExtendWith(PostgresExtension.class)
class ReadmeSnippetsTest {

  @Test
  void readmeShowsExactlyTheCodeTestedHere() {
    assertThat(
            ReadmeSnippets.verify(
                Path.of("../README.md"),
                "core",
                Path.of("src/test/java/dev/retsu/lock/ReadmeSnippetsTest.java")))
        .contains("core/acquire", "core/holder");
  }

  @Test
  void acquire(TestDatabase db) throws SQLException {
    db.execute(
        "CREATE TABLE invoices (id int, state text); INSERT INTO invoices VALUES (1, 'new')");
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
