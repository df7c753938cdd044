package dev.retsu.lock.internal.session;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.fakes.StderrCapture;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A pgjdbc whose private fields moved: the probe's own lookup, pointed at names that do not exist,
 * says so once at WARN with the fallback, and the probe then answers what the fallback needs on a
 * real session (UNKNOWN without the stream, so callers prove the session with a round trip; a read
 * without the buffered input).
 */
@ExtendWith(PostgresExtension.class)
class PgjdbcInternalsIntegrationTest {

  private static final Duration WITHIN = Duration.ofSeconds(20);

  @Test
  void pgjdbcsOwnFieldsAreFoundWithoutAWarning() throws Exception {
    AtomicReference<PgjdbcInternals> found = new AtomicReference<>();

    String log = StderrCapture.during(() -> found.set(PgjdbcInternals.pgjdbc()));

    assertThat(found.get().stream).isNotNull();
    assertThat(found.get().input).isNotNull();
    assertThat(log).doesNotContain("WARN");
    assertThat(PgSession.canProbe()).isTrue();
  }

  @Test
  void aMovedStreamFieldIsNamedOnceAtWarnAndTheProbeLeavesTheSessionToARoundTrip(TestDatabase db)
      throws Exception {
    String field = "pgStreamMovedInATest";

    Lookup moved = lookup(PgjdbcInternals.EXECUTOR_CLASS, field, PgjdbcInternals.INPUT_FIELD);
    String log = moved.log();

    assertThat(moved.internals().stream).isNull();
    assertThat(moved.internals().input).as("the other field is still found").isNotNull();
    assertThat(log)
        .contains("WARN")
        .contains("org.postgresql.core.QueryExecutorBase." + field)
        .contains("pgjdbc " + PgjdbcInternals.pgjdbcVersion())
        .contains("NoSuchFieldException")
        .contains("ensureLeader() proves the session with a round trip on every call")
        .contains("at its next heartbeat round trip")
        .contains("docs/troubleshooting.md");
    assertThat(PgjdbcInternals.pgjdbcVersion()).startsWith("42.");
    String again = lookup(PgjdbcInternals.EXECUTOR_CLASS, field, PgjdbcInternals.INPUT_FIELD).log();
    assertThat(again).as("logged once per JVM").doesNotContain(field);

    try (Connection c = db.connect()) {
      int pid = pid(c);
      assertThat(PgSession.probe(c, true)).isEqualTo(SessionIo.Evidence.QUIET);
      assertThat(PgSession.probe(moved.internals(), c, true)).isEqualTo(SessionIo.Evidence.UNKNOWN);
      assertThat(PgSession.countsPendingBytes(moved.internals(), c)).isFalse();

      db.terminateBackend(pid);
      await().atMost(WITHIN).until(() -> PgSession.probe(c, true) == SessionIo.Evidence.ENDED);
      assertThat(PgSession.probe(moved.internals(), c, true))
          .as("the socket is not read: the end is left to the next round trip")
          .isEqualTo(SessionIo.Evidence.UNKNOWN);
    }
  }

  @Test
  void aMovedInputFieldIsNamedAtWarnAndTheProbeReadsTheSocketInstead(TestDatabase db)
      throws Exception {
    String field = "pgInputMovedInATest";

    Lookup moved = lookup(PgjdbcInternals.EXECUTOR_CLASS, PgjdbcInternals.STREAM_FIELD, field);
    String log = moved.log();

    assertThat(moved.internals().stream).isNotNull();
    assertThat(moved.internals().input).isNull();
    assertThat(log)
        .contains("WARN")
        .contains("org.postgresql.core.PGStream." + field)
        .contains("every probe reads the socket for up to 1 ms");

    try (Connection c = db.connect()) {
      int pid = pid(c);
      assertThat(PgSession.countsPendingBytes(moved.internals(), c)).isFalse();
      assertThat(PgSession.probe(moved.internals(), c, false))
          .as("read, though no read was asked for")
          .isEqualTo(SessionIo.Evidence.QUIET);
      db.terminateBackend(pid);
      await()
          .atMost(WITHIN)
          .until(() -> PgSession.probe(moved.internals(), c, false) == SessionIo.Evidence.ENDED);
    }
  }

  @Test
  void aMissingClassIsNamedAtWarnToo() throws Exception {
    String owner = "org.postgresql.core.QueryExecutorMovedInATest";

    String log = lookup(owner, PgjdbcInternals.STREAM_FIELD, PgjdbcInternals.INPUT_FIELD).log();

    assertThat(log)
        .contains("WARN")
        .contains(owner + "." + PgjdbcInternals.STREAM_FIELD)
        .contains("ClassNotFoundException");
  }

  private static int pid(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        var rs = s.executeQuery("SELECT pg_backend_pid()")) {
      rs.next();
      return rs.getInt(1);
    }
  }

  /** What one lookup found and what it logged. */
  private record Lookup(PgjdbcInternals internals, String log) {}

  /** Looks the fields up under the given names (the stream's class is pgjdbc's own). */
  private static Lookup lookup(String owner, String streamField, String inputField)
      throws Exception {
    AtomicReference<PgjdbcInternals> found = new AtomicReference<>();
    String log =
        StderrCapture.during(
            () ->
                found.set(
                    PgjdbcInternals.lookup(
                        owner, streamField, PgjdbcInternals.STREAM_CLASS, inputField)));
    return new Lookup(found.get(), log);
  }
}
