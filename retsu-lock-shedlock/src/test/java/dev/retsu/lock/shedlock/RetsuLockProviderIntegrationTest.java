package dev.retsu.lock.shedlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.AdvisoryLockLease;
import dev.retsu.lock.testing.ChildJvm;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.support.KeepAliveLockProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * What the provider adds to ShedLock's contract ({@link ShedLockContractIntegrationTest}): release
 * on a crash, on a terminated session and on close, the opt-out of {@code lockAtMostFor}, the lease
 * for work on the lock's own session, the cost of a held lock, and {@code KeepAliveLockProvider} on
 * top.
 */
@ExtendWith(PostgresExtension.class)
class RetsuLockProviderIntegrationTest {

  private TestDatabase db;
  private HikariDataSource pool;
  private RetsuLockProvider provider;

  @BeforeEach
  void start(TestDatabase db) {
    this.db = db;
    this.pool = ShedLockTesting.pool(db, 6);
    this.provider = RetsuLockProvider.builder(pool).candidateId("node-a").build();
  }

  @AfterEach
  void stop() {
    provider.close();
    pool.close();
  }

  private static LockConfiguration config(String name, Duration atMost, Duration atLeast) {
    return new LockConfiguration(Instant.now(), name, atMost, atLeast);
  }

  private int holders(String name) throws SQLException {
    return ShedLockTesting.holders(db, provider.key(name));
  }

  @Test
  void aKilledHolderFreesTheLockAtOnceNotAfterLockAtMostFor() throws Exception {
    String name = "nightly-report";
    List<String> command =
        ChildJvm.javaCommand(
            List.of("-Xmx96m"),
            HoldShedLockMain.class,
            List.of(db.jdbcUrl(), db.user(), db.password(), name));
    try (Holder child = new Holder(new ProcessBuilder(command))) {
      await().atMost(Duration.ofSeconds(60)).until(() -> child.logged("LOCKED "));
      assertThat(provider.lock(config(name, Duration.ofMinutes(1), Duration.ZERO))).isEmpty();

      child.process.destroyForcibly(); // kill -9: no unlock, no shutdown hook
      child.process.waitFor();

      // The child asked for lockAtMostFor = 10 minutes; its session ended with its process.
      Optional<SimpleLock> taken =
          await()
              .atMost(Duration.ofSeconds(10))
              .until(
                  () -> provider.lock(config(name, Duration.ofMinutes(1), Duration.ZERO)),
                  Optional::isPresent);
      taken.get().unlock();
    }
  }

  @Test
  void aTerminatedSessionFreesTheLockForOthersAndFailsTheHoldersExtend() throws Exception {
    String name = "terminated";
    SimpleLock lock =
        provider.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)).orElseThrow();
    int pid = provider.lease(name).orElseThrow().backendPid();

    assertThat(db.terminateBackend(pid)).isTrue();
    try (RetsuLockProvider other = RetsuLockProvider.builder(pool).candidateId("node-b").build()) {
      SimpleLock taken =
          await()
              .atMost(Duration.ofSeconds(10))
              .until(
                  () -> other.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)),
                  Optional::isPresent)
              .get();
      // The old holder learns it at its next extend (KeepAliveLockProvider's heartbeat) ...
      assertThat(lock.extend(Duration.ofMinutes(5), Duration.ZERO)).isEmpty();
      assertThat(provider.heldSessions()).isZero();
      // ... and the new holder still holds it.
      assertThat(ShedLockTesting.holderPid(db, provider.key(name)))
          .isEqualTo(other.lease(name).orElseThrow().backendPid());
      taken.unlock();
    }
  }

  @Test
  void withoutEnforcementALockOutlivesLockAtMostForUntilUnlocked() throws Exception {
    try (RetsuLockProvider crashOnly =
        RetsuLockProvider.builder(pool)
            .candidateId("crash-only")
            .enforceLockAtMostFor(false)
            .build()) {
      String name = "crash-only";
      SimpleLock lock =
          crashOnly.lock(config(name, Duration.ofMillis(100), Duration.ZERO)).orElseThrow();
      // held throughout five times its lockAtMostFor
      await()
          .during(Duration.ofMillis(500))
          .atMost(Duration.ofSeconds(5))
          .until(() -> holders(name) == 1);
      // five times lockAtMostFor later: still held, still extensible
      assertThat(holders(name)).isEqualTo(1);
      assertThat(crashOnly.lock(config(name, Duration.ofMillis(100), Duration.ZERO))).isEmpty();
      SimpleLock extended = lock.extend(Duration.ofMillis(100), Duration.ZERO).orElseThrow();
      extended.unlock();
      assertThat(holders(name)).isZero();
    }
  }

  @Test
  void aTaskRunsItsWorkOnTheSessionThatHoldsItsLock() throws Exception {
    String name = "on-the-lease";
    assertThat(provider.lease(name)).isEmpty();
    SimpleLock lock =
        provider.lock(config(name, Duration.ofMinutes(1), Duration.ZERO)).orElseThrow();
    AdvisoryLockLease lease = provider.lease(name).orElseThrow();
    int workPid =
        lease.withConnection(
            c -> {
              try (Statement s = c.createStatement();
                  ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
                rs.next();
                return rs.getInt(1);
              }
            });
    assertThat(workPid).isEqualTo(ShedLockTesting.holderPid(db, provider.key(name)));
    lock.unlock();
    assertThat(provider.lease(name)).isEmpty();
    assertThatThrownBy(() -> lease.connection().createStatement().execute("SELECT 1"))
        .isInstanceOf(SQLException.class)
        .hasFieldOrPropertyWithValue("SQLState", "08003");
  }

  @Test
  void lockAtMostForEndsTheSessionEvenInTheMiddleOfATasksStatement() throws Exception {
    String name = "hung-task";
    provider.lock(config(name, Duration.ofMillis(500), Duration.ZERO)).orElseThrow();
    AdvisoryLockLease lease = provider.lease(name).orElseThrow();
    assertThatThrownBy(
            () ->
                lease.withConnection(
                    c -> {
                      try (PreparedStatement ps = c.prepareStatement("SELECT pg_sleep(60)")) {
                        return ps.execute();
                      }
                    }))
        .isInstanceOf(SQLException.class);
    // The server notices the aborted client within client_connection_check_interval (2 s), not
    // when pg_sleep(60) ends.
    await().atMost(Duration.ofSeconds(10)).until(() -> holders(name) == 0);
    assertThat(provider.heldSessions()).isZero();
  }

  @Test
  void eachHeldLockCostsOneSessionAndCloseEndsThemAllLockAtLeastForIncluded() throws Exception {
    String prefix = "retsu-lock:cost";
    RetsuLockProvider provider = RetsuLockProvider.builder(pool).candidateId("cost").build();
    assertThat(db.clientSessions(prefix)).isZero();
    SimpleLock a = provider.lock(config("a", Duration.ofMinutes(1), Duration.ZERO)).orElseThrow();
    SimpleLock b =
        provider.lock(config("b", Duration.ofMinutes(1), Duration.ofMinutes(1))).orElseThrow();
    assertThat(db.clientSessions(prefix)).isEqualTo(2);
    assertThat(provider.heldSessions()).isEqualTo(2);

    a.unlock(); // no lockAtLeastFor: its session ends now
    b.unlock(); // lockAtLeastFor 1 minute: its session stays
    assertThat(ShedLockTesting.holders(db, provider.key("a"))).isZero();
    assertThat(ShedLockTesting.holders(db, provider.key("b"))).isEqualTo(1);
    // a's backend leaves pg_stat_activity once the server has ended it, just after the unlock
    await().atMost(Duration.ofSeconds(5)).until(() -> db.clientSessions(prefix) == 1);

    provider.close();
    assertThat(ShedLockTesting.holders(db, provider.key("b"))).isZero();
    await().atMost(Duration.ofSeconds(5)).until(() -> db.clientSessions(prefix) == 0);
    assertThatThrownBy(() -> provider.lock(config("c", Duration.ofMinutes(1), Duration.ZERO)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("closed");
  }

  /**
   * Waits out KeepAliveLockProvider's least lockAtMostFor (30 s), so it runs under {@code
   * -Pshedlock-keepalive}, not in the default build, which must stay under 15 minutes on 2 cores.
   */
  @Test
  @EnabledIfSystemProperty(
      named = "retsu.shedlock.keepalive",
      matches = "true",
      disabledReason = "waits 33 s past lockAtMostFor: run with -Pshedlock-keepalive")
  void keepAliveLockProviderKeepsALongTaskLockedPastLockAtMostFor() throws Exception {
    ScheduledExecutorService extender =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "retsu-lock-test-keepalive");
              t.setDaemon(true);
              return t;
            });
    try {
      KeepAliveLockProvider keepAlive = new KeepAliveLockProvider(provider, extender);
      String name = "long-task";
      // KeepAliveLockProvider's least lockAtMostFor is 30 s; it extends every 15 s
      SimpleLock lock =
          keepAlive.lock(config(name, Duration.ofSeconds(30), Duration.ZERO)).orElseThrow();
      int pid = ShedLockTesting.holderPid(db, provider.key(name));
      await()
          .during(Duration.ofSeconds(33))
          .atMost(Duration.ofSeconds(45))
          .pollInterval(Duration.ofMillis(500))
          .until(() -> ShedLockTesting.holderPid(db, provider.key(name)) == pid);
      // 33 s after the lock was taken, past its 30 s lockAtMostFor: the same session holds it
      assertThat(ShedLockTesting.holderPid(db, provider.key(name))).isEqualTo(pid);
      lock.unlock();
      assertThat(holders(name)).isZero();
    } finally {
      extender.shutdownNow();
    }
  }

  /** The child node. */
  private static final class Holder extends ChildJvm {
    Holder(ProcessBuilder builder) {
      super("shedlock-holder", builder);
    }
  }
}
