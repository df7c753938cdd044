package dev.retsu.lock.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.AdvisoryLock;
import dev.retsu.lock.AdvisoryLockLease;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LeadershipLostException;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.UnsafeSessionException;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Scenario 8: PgBouncer in transaction pooling mode moves statements between backends, so a session
 * lock cannot give mutual exclusion. The lease must refuse to lead. Uses Debian's {@code pgbouncer}
 * (.ci/run installs it); skipped with a message where it is missing.
 */
@ExtendWith(PostgresExtension.class)
class PgBouncerIntegrationTest {

  private Process bouncer;
  private Path dir;
  private int port;
  private TestDatabase db;

  private static Path pgbouncerBinary() {
    for (String p :
        List.of("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer", "/usr/local/bin/pgbouncer")) {
      if (Files.isExecutable(Path.of(p))) {
        return Path.of(p);
      }
    }
    return null;
  }

  @BeforeEach
  void database(TestDatabase db) {
    this.db = db;
  }

  private void startBouncer(int poolSize) throws Exception {
    Path binary = pgbouncerBinary();
    Assumptions.assumeTrue(
        binary != null,
        "pgbouncer is not installed (Debian: apt-get install pgbouncer); skipping the pooler"
            + " scenario");
    java.util.regex.Matcher m =
        java.util.regex.Pattern.compile("^jdbc:postgresql://([^:/]+):(\\d+)/.*")
            .matcher(db.jdbcUrl());
    Assumptions.assumeTrue(m.matches(), "needs a host:port URL");
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    dir = Files.createTempDirectory("retsu-lock-pgbouncer-");
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
    Files.writeString(
        dir.resolve("pgbouncer.ini"),
        String.join(
            "\n",
            "[databases]",
            "* = host=" + m.group(1) + " port=" + m.group(2),
            "[pgbouncer]",
            "listen_addr = 127.0.0.1",
            "listen_port = " + port,
            "unix_socket_dir =",
            "auth_type = trust",
            "auth_file = " + dir.resolve("users.txt"),
            "pool_mode = transaction",
            "server_round_robin = 1",
            "default_pool_size = " + poolSize,
            "ignore_startup_parameters = extra_float_digits,options",
            "logfile = " + dir.resolve("pgbouncer.log"),
            ""));
    Files.writeString(dir.resolve("users.txt"), "\"" + db.user() + "\" \"\"\n");
    for (Path p : List.of(dir.resolve("pgbouncer.ini"), dir.resolve("users.txt"))) {
      Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rw-rw-rw-"));
    }
    List<String> cmd = new ArrayList<>();
    if (isRoot()) {
      cmd.addAll(List.of("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"));
    }
    cmd.add(binary.toString());
    cmd.add(dir.resolve("pgbouncer.ini").toString());
    bouncer =
        new ProcessBuilder(cmd)
            .redirectErrorStream(true)
            .redirectOutput(dir.resolve("stdout.log").toFile())
            .start();
    await()
        .atMost(Duration.ofSeconds(20))
        .ignoreExceptions()
        .until(
            () -> {
              try (Connection c = connect()) {
                return c.isValid(2);
              }
            });
    // Open every server connection, so round robin can hand transactions to different ones.
    CompletableFuture<?>[] warm = new CompletableFuture<?>[poolSize];
    for (int i = 0; i < warm.length; i++) {
      warm[i] =
          CompletableFuture.runAsync(
              () -> {
                try (Connection c = connect();
                    Statement s = c.createStatement()) {
                  s.execute("SELECT pg_sleep(0.3)");
                } catch (SQLException e) {
                  throw new IllegalStateException(e);
                }
              });
    }
    CompletableFuture.allOf(warm).get(20, TimeUnit.SECONDS);
  }

  @AfterEach
  void stopBouncer() throws Exception {
    if (bouncer != null) {
      bouncer.destroy();
      bouncer.waitFor(10, TimeUnit.SECONDS);
    }
  }

  private static boolean isRoot() {
    return "root".equals(System.getProperty("user.name"));
  }

  private String url() {
    return "jdbc:postgresql://127.0.0.1:" + port + "/" + db.name() + "?prepareThreshold=0";
  }

  private Connection connect() throws SQLException {
    Properties p = new Properties();
    p.setProperty("user", db.user());
    return DriverManager.getConnection(url(), p);
  }

  private PGSimpleDataSource viaBouncer() {
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setUrl(url());
    ds.setUser(db.user());
    return ds;
  }

  private void assertLockFreedOnceThePoolerLetsGo(LockKey key) throws Exception {
    // The lock may stay stranded on a pooled server backend (POSTGRES-FACTS 5): retsu-lock never
    // unlocks through a pooler. Once the pooler closes its server connections it is free again.
    bouncer.destroy();
    bouncer.waitFor(10, TimeUnit.SECONDS);
    AdvisoryLock direct = AdvisoryLock.of(db.dataSource(), key);
    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () ->
                direct
                    .tryAcquire()
                    .map(
                        l -> {
                          l.close();
                          return true;
                        })
                    .orElse(false));
  }

  /**
   * One server connection shared by every client: the first candidate's lock lives on that backend,
   * so a second candidate's session "already holds" it (advisory locks are re-entrant). It must be
   * refused, deterministically: never two leaders.
   */
  @Test
  void secondCandidateOnASharedBackendIsRefusedSoThereAreNeverTwoLeaders() throws Exception {
    startBouncer(1);
    LockKey key = LockKey.named("retsu-test", "pgbouncer-shared");
    AdvisoryLockLease first = AdvisoryLock.of(viaBouncer(), key).tryAcquire().orElseThrow();
    for (String id : List.of("second", "third")) {
      LeaderLoop loop =
          FaultTiming.fast(LeaderLoop.builder(viaBouncer(), key)).candidateId(id).build();
      assertThatThrownBy(() -> loop.run(ctx -> {}))
          .isInstanceOfSatisfying(
              UnsafeSessionException.class,
              e -> {
                assertThat(e.reason()).isEqualTo(LossReason.POOLER_DETECTED);
                assertThat(e.getMessage()).contains("already holds this lock");
              });
    }
    first.close();
    assertLockFreedOnceThePoolerLetsGo(key);
  }

  /**
   * A busy pool moves a client's statements between backends: the lease sees its backend pid change
   * (or its lock vanish) and the candidate refuses to lead.
   */
  @Test
  void busyTransactionPoolMovesTheBackendAndTheCandidateRefusesToLead() throws Exception {
    startBouncer(4);
    LockKey key = LockKey.named("retsu-test", "pgbouncer-busy");
    AtomicBoolean busy = new AtomicBoolean(true);
    List<Thread> traffic = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      Thread t =
          new Thread(
              () -> {
                try (Connection c = connect();
                    Statement s = c.createStatement()) {
                  while (busy.get()) {
                    s.execute("SELECT pg_sleep(0.005)");
                  }
                } catch (SQLException e) {
                  // the pooler went away at the end of the test
                }
              },
              "retsu-lock-test-pooler-traffic-" + i);
      t.start();
      traffic.add(t);
    }
    try {
      LeaderLoop loop =
          FaultTiming.fast(LeaderLoop.builder(viaBouncer(), key)).candidateId("bounced").build();
      CompletableFuture<Void> run = loop.start(ctx -> {});
      try {
        assertThatThrownBy(() -> run.get(60, TimeUnit.SECONDS))
            .cause()
            .isInstanceOfSatisfying(
                LeadershipLostException.class,
                e ->
                    assertThat(e.reason())
                        .isIn(LossReason.POOLER_DETECTED, LossReason.LOCK_NOT_HELD));
      } finally {
        loop.close();
      }
    } finally {
      busy.set(false);
      for (Thread t : traffic) {
        t.join(10_000);
      }
    }
    assertLockFreedOnceThePoolerLetsGo(key);
  }
}
