package dev.retsu.lock.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.testing.FaultProxy;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLWarning;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * What a transaction-level lock inside one long transaction (the .NET DistributedLock library's
 * {@code UseTransaction}) would cost as a leader's lock behind a transaction-mode pooler, measured
 * against PostgreSQL and Debian's PgBouncer in transaction mode. It is why retsu-lock offers no
 * such mode (docs/MANAGED-POSTGRES.md): the transaction does pin one backend, but the leader's
 * session can then never commit, an assigned transaction id (the fencing token's) holds back VACUUM
 * for the whole term, and only {@code idle_in_transaction_session_timeout} or the pooler's own
 * {@code idle_transaction_timeout} free the lock of a leader that vanished. Figures go to {@code
 * target/transaction-pooler-costs.tsv}.
 */
@ExtendWith(PostgresExtension.class)
class TransactionPoolerModeIntegrationTest {

  @TempDir Path dir;

  private static Connection connect(PGSimpleDataSource ds) throws SQLException {
    return ds.getConnection();
  }

  private static PGSimpleDataSource through(TestDatabase db, String url) {
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setUrl(url);
    ds.setUser(db.user());
    ds.setPassword(db.password());
    ds.setPrepareThreshold(0); // no named statements on shared backends
    return ds;
  }

  private static boolean tryXactLock(Connection c, long key) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT pg_try_advisory_xact_lock(?)")) {
      ps.setLong(1, key);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getBoolean(1);
      }
    }
  }

  private static int pid(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
      rs.next();
      return rs.getInt(1);
    }
  }

  /** Whether another client gets the key in a transaction of its own (and lets it go). */
  private static boolean freeFor(PGSimpleDataSource ds, long key) throws SQLException {
    try (Connection c = connect(ds)) {
      c.setAutoCommit(false);
      boolean got = tryXactLock(c, key);
      c.rollback();
      return got;
    }
  }

  /**
   * Inside one transaction the pooler keeps the client on one backend, even while other clients
   * keep every other backend busy, and nobody else gets the key; the commit that ends the
   * transaction frees the key at once. So the lock lives exactly as long as a transaction the
   * leader's session may never commit.
   */
  @Test
  void oneLongTransactionPinsOneBackendAndItsCommitFreesTheLock(TestDatabase db) throws Exception {
    try (ProxyProcess bouncer = ProxyProcess.pgbouncer(db, dir, "transaction", 3)) {
      PGSimpleDataSource ds = through(db, bouncer.jdbcUrl());
      long key = TestKeys.nextValue();
      AtomicBoolean busy = new AtomicBoolean(true);
      List<Thread> traffic = new ArrayList<>();
      for (int i = 0; i < 2; i++) {
        Thread t =
            new Thread(
                () -> {
                  try (Connection c = connect(ds);
                      Statement s = c.createStatement()) {
                    while (busy.get()) {
                      s.execute("SELECT pg_sleep(0.002)");
                    }
                  } catch (SQLException e) {
                    // the pooler went away at the end of the test
                  }
                },
                "retsu-lock-test-tx-pooler-traffic-" + i);
        t.start();
        traffic.add(t);
      }
      try (Connection leader = connect(ds)) {
        leader.setAutoCommit(false);
        assertThat(tryXactLock(leader, key)).isTrue();
        Set<Integer> pids = new HashSet<>();
        for (int i = 0; i < 50; i++) {
          pids.add(pid(leader));
          assertThat(freeFor(ds, key)).as("another client, round %d", i).isFalse();
        }
        assertThat(pids).as("backends the leader's statements ran on").hasSize(1);
        leader.commit();
        assertThat(freeFor(ds, key)).as("after the leader's commit").isTrue();
      } finally {
        busy.set(false);
        for (Thread t : traffic) {
          t.join(10_000);
        }
      }
    }
  }

  /**
   * Without a transaction id the lock's transaction holds back VACUUM only as far as its last
   * statement's snapshot (pgjdbc leaves that statement's portal open until the next one): a row
   * that died before the leader's next heartbeat is removable after it. Once the transaction has a
   * transaction id, as the fencing token's {@code pg_current_xact_id()} gives it, every row that
   * dies after it stays unremovable until the term ends, however many statements follow: for a lock
   * held for days, VACUUM stops for days.
   */
  @Test
  void aTransactionIdInTheLocksTransactionHoldsBackVacuumForTheWholeTerm(TestDatabase db)
      throws Exception {
    long key = TestKeys.nextValue();
    db.execute(
        "DROP TABLE IF EXISTS tx_pooler_churn; CREATE TABLE tx_pooler_churn (id int PRIMARY KEY,"
            + " v int) WITH (autovacuum_enabled = false); INSERT INTO tx_pooler_churn SELECT g, 0"
            + " FROM generate_series(1, 1000) g");
    try (Connection leader = db.connect();
        Connection other = db.connect()) {
      leader.setAutoCommit(false);
      assertThat(tryXactLock(leader, key)).isTrue();
      assertThat(deadButNotRemovable(other, leader)).as("the lock alone").isZero();

      try (Statement s = leader.createStatement();
          ResultSet rs = s.executeQuery("SELECT pg_current_xact_id()")) {
        rs.next();
      }
      int held = deadButNotRemovable(other, leader);
      assertThat(held).as("with a transaction id in the lock's transaction").isEqualTo(1000);
      record("dead-rows-kept-by-the-terms-xid", held);
      leader.rollback();
      assertThat(deadButNotRemovable(other, leader))
          .as("once the term's transaction ended")
          .isZero();
    } finally {
      db.execute("DROP TABLE IF EXISTS tx_pooler_churn");
    }
  }

  /**
   * Kills every row once, lets the leader run one statement (its heartbeat), then VACUUMs the
   * table; returns the dead rows VACUUM could not remove.
   */
  private static int deadButNotRemovable(Connection c, Connection leader) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute("UPDATE tx_pooler_churn SET v = v + 1");
      pid(leader);
      s.execute("VACUUM (VERBOSE) tx_pooler_churn");
      // PostgreSQL 15+: "N are dead but not yet removable"; 14: "N dead row versions cannot be
      // removed yet", in the notice's detail, which the warning's message does not carry.
      Pattern p =
          Pattern.compile(
              "(\\d+) are dead but not yet removable|(\\d+) dead row versions cannot be removed yet");
      StringBuilder seen = new StringBuilder();
      for (SQLWarning w = s.getWarnings(); w != null; w = w.getNextWarning()) {
        String text = w.getMessage();
        if (w instanceof org.postgresql.util.PSQLWarning pw
            && pw.getServerErrorMessage() != null
            && pw.getServerErrorMessage().getDetail() != null) {
          text += " " + pw.getServerErrorMessage().getDetail();
        }
        seen.append(text).append('\n');
        Matcher m = p.matcher(text);
        if (m.find()) {
          return Integer.parseInt(m.group(1) != null ? m.group(1) : m.group(2));
        }
      }
      throw new AssertionError("VACUUM VERBOSE reported no dead-row count:\n" + seen);
    }
  }

  /**
   * A leader cut off from the pooler: the pooler keeps its server connection in the transaction
   * (its client side sees no FIN), the server's keepalives watch the pooler, and {@code
   * idle_session_timeout} does not apply inside a transaction. Only {@code
   * idle_in_transaction_session_timeout}, which the transaction sets for itself, frees the lock.
   */
  @Test
  void aVanishedLeadersLockIsFreedOnlyByTheIdleInTransactionTimeout(TestDatabase db)
      throws Exception {
    try (ProxyProcess bouncer = ProxyProcess.pgbouncer(db, dir, "transaction", 3);
        FaultProxy cut = FaultProxy.inFrontOf(bouncer.jdbcUrl())) {
      PGSimpleDataSource direct = through(db, bouncer.jdbcUrl());
      PGSimpleDataSource behindCut = through(db, cut.rewrite(bouncer.jdbcUrl()));
      long key = TestKeys.nextValue();
      Connection leader = connect(behindCut);
      try {
        leader.setAutoCommit(false);
        try (Statement s = leader.createStatement()) {
          s.execute(
              "SELECT set_config('idle_in_transaction_session_timeout', '2000', true),"
                  + " set_config('idle_session_timeout', '1000', true)");
        }
        assertThat(tryXactLock(leader, key)).isTrue();
        cut.blackhole();
        long start = System.nanoTime();
        assertThat(freeFor(direct, key)).as("right after the cut").isFalse();
        await().atMost(Duration.ofSeconds(20)).until(() -> freeFor(direct, key));
        long freedMs = (System.nanoTime() - start) / 1_000_000;
        record("freed-after-cut-ms-with-idle_in_transaction_session_timeout-2s", freedMs);
        assertThat(freedMs)
            .as("freed by the 2 s idle-in-transaction timeout")
            .isBetween(1500L, 8000L);
      } finally {
        cut.heal();
        leader.abort(Runnable::run);
      }
    }
  }

  /**
   * PgBouncer's own {@code idle_transaction_timeout} ends a client idle in a transaction longer
   * than it, whatever the client set: a bound the leader's session cannot see or change, which must
   * exceed every pause between its statements.
   */
  @Test
  void thePoolersIdleTransactionTimeoutEndsTheLockWhateverTheClientSet(TestDatabase db)
      throws Exception {
    try (ProxyProcess bouncer =
        ProxyProcess.pgbouncer(db, dir, "transaction", 3, "idle_transaction_timeout = 1")) {
      PGSimpleDataSource ds = through(db, bouncer.jdbcUrl());
      long key = TestKeys.nextValue();
      try (Connection leader = connect(ds)) {
        leader.setAutoCommit(false);
        assertThat(tryXactLock(leader, key)).isTrue();
        await().atMost(Duration.ofSeconds(20)).until(() -> freeFor(ds, key));
        assertThatThrownBy(() -> pid(leader))
            .isInstanceOfSatisfying(
                SQLException.class, e -> assertThat(e.getSQLState()).startsWith("08"));
      }
    }
  }

  private static void record(String what, long value) throws IOException {
    Path out = Path.of("target", "transaction-pooler-costs.tsv");
    Files.createDirectories(out.getParent());
    Files.writeString(
        out,
        String.format(Locale.ROOT, "%s\t%d%n", what, value),
        StandardOpenOption.CREATE,
        StandardOpenOption.APPEND);
  }
}
