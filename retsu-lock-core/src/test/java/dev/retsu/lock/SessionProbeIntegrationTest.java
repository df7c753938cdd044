package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.internal.loop.LoopSettings;
import dev.retsu.lock.internal.session.LockWaiter;
import dev.retsu.lock.internal.session.PgSession;
import dev.retsu.lock.internal.session.SessionIo;
import dev.retsu.lock.testing.FaultProxy;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.lang.reflect.Field;
import java.net.Socket;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import jdk.net.ExtendedSocketOptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.postgresql.core.BaseConnection;
import org.postgresql.core.PGStream;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The check behind {@link LeaderContext#ensureLeader()}: what the client already knows about its
 * session, read from the socket without a round trip, idle or inside a transaction.
 */
@ExtendWith(PostgresExtension.class)
class SessionProbeIntegrationTest {

  private static final Duration WITHIN = Duration.ofSeconds(20);

  /**
   * A WAIT standby blocks for minutes in one statement; its client notices a dead server or a
   * healed partition through its own socket's keepalives, the same ones the server side gets.
   */
  @Test
  void aWaitingSessionsClientSocketCarriesTheLeadersKeepalives(TestDatabase db) throws Exception {
    LoopSettings settings =
        LeaderLoop.builder(db.dataSource(), TestKeys.next())
            .timing(
                FailoverTiming.DEFAULT.withServerKeepalives(
                    Duration.ofSeconds(7), Duration.ofSeconds(3), 4))
            .settings();
    try (LockWaiter waiter = LockWaiter.open(settings.spec(), Duration.ofMinutes(5))) {
      Socket socket = waiter.session().call(SessionProbeIntegrationTest::socketOf);
      assertThat(socket.getKeepAlive()).isTrue();
      assertThat(socket.getOption(ExtendedSocketOptions.TCP_KEEPIDLE)).isEqualTo(7);
      assertThat(socket.getOption(ExtendedSocketOptions.TCP_KEEPINTERVAL)).isEqualTo(3);
      assertThat(socket.getOption(ExtendedSocketOptions.TCP_KEEPCOUNT)).isEqualTo(4);
    }
  }

  private static Socket socketOf(Connection c) throws SQLException {
    Object executor = c.unwrap(BaseConnection.class).getQueryExecutor();
    try {
      Field f = Class.forName("org.postgresql.core.QueryExecutorBase").getDeclaredField("pgStream");
      f.setAccessible(true);
      return ((PGStream) f.get(executor)).getSocket();
    } catch (ReflectiveOperationException e) {
      throw new SQLException("pgjdbc's stream is not where the test expects it", e);
    }
  }

  @Test
  void aLiveQuietSessionReadsQuietAndATerminatedOneEnded(TestDatabase db) throws Exception {
    try (Connection c = db.connect()) {
      int pid = pid(c);
      assertThat(PgSession.probe(c)).isEqualTo(SessionIo.Evidence.QUIET);
      db.terminateBackend(pid);
      await().atMost(WITHIN).until(() -> !db.backendExists(pid));
      assertThat(PgSession.probe(c)).isEqualTo(SessionIo.Evidence.ENDED);
    }
  }

  /**
   * Without a read, a probe sees what the client has received as bytes: the FATAL a terminate
   * sends. A reset with no message before it is not a byte: only a read sees it.
   */
  @Test
  void withoutAReadAFatalIsSeenButABareResetOnlyByARead(TestDatabase db) throws Exception {
    try (Connection c = db.connect()) {
      int pid = pid(c);
      assertThat(PgSession.countsPendingBytes(c)).isTrue();
      assertThat(PgSession.probe(c, false)).isEqualTo(SessionIo.Evidence.QUIET);
      db.terminateBackend(pid);
      await().atMost(WITHIN).until(() -> PgSession.probe(c, false) == SessionIo.Evidence.ENDED);
    }
    try (FaultProxy proxy = FaultProxy.inFrontOf(db.jdbcUrl())) {
      PGSimpleDataSource viaProxy = db.dataSource();
      viaProxy.setUrl(proxy.rewrite(db.jdbcUrl()));
      Connection c = viaProxy.getConnection();
      try {
        int pid = pid(c);
        proxy.resetAll();
        await().atMost(WITHIN).until(() -> !db.backendExists(pid));
        assertThat(PgSession.probe(c, false))
            .as("a reset is no pending byte")
            .isEqualTo(SessionIo.Evidence.QUIET);
        assertThat(PgSession.probe(c, true)).isEqualTo(SessionIo.Evidence.ENDED);
      } finally {
        c.abort(Runnable::run); // a close would write a Terminate to the reset socket and fail
      }
    }
  }

  @Test
  void insideAnOpenTransactionTheEndIsSeenToo(TestDatabase db) throws Exception {
    try (Connection c = db.connect()) {
      int pid = pid(c);
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        s.execute("SELECT 1");
      }
      assertThat(PgSession.transaction(c)).isEqualTo(PgSession.Transaction.OPEN);
      assertThat(PgSession.probe(c)).isEqualTo(SessionIo.Evidence.QUIET);
      db.terminateBackend(pid);
      await().atMost(WITHIN).until(() -> !db.backendExists(pid));
      assertThat(PgSession.probe(c)).isEqualTo(SessionIo.Evidence.ENDED);
    }
  }

  @Test
  void aPendingNotificationIsPendingNotEnded(TestDatabase db) throws Exception {
    try (Connection c = db.connect();
        Connection other = db.connect()) {
      try (Statement s = c.createStatement()) {
        s.execute("LISTEN retsu_probe");
      }
      try (Statement s = other.createStatement()) {
        s.execute("NOTIFY retsu_probe, 'x'");
      }
      await().atMost(WITHIN).until(() -> PgSession.probe(c) == SessionIo.Evidence.PENDING);
      // A round trip reads it; the session is fine.
      assertThat(pid(c)).isPositive();
    }
  }

  private static int pid(Connection c) throws Exception {
    try (Statement s = c.createStatement();
        var rs = s.executeQuery("SELECT pg_backend_pid()")) {
      rs.next();
      return rs.getInt(1);
    }
  }
}
