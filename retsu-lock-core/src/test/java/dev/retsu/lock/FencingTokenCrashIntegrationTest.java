package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.fakes.RecordingListener;
import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.PostgresServer.ShutdownMode;
import dev.retsu.lock.testing.TestDatabase;
import java.time.Duration;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Invariant 8 across crashes: the statement that starts a term writes only its commit record and
 * waits for no flush, so a crash right after a grant can lose that commit and the server hands the
 * same or a smaller xid out again. The next term's token must still be larger: the crash recovery
 * ends with a checkpoint whose redo position lies beyond everything read before the crash. Each
 * crash strikes right after a term started (before the WAL writer's next round, in most rounds),
 * for a POLL and a WAIT candidate, three ways: an immediate stop, SIGKILL of the leader's own
 * backend (the postmaster then restarts every session), and SIGKILL of the postmaster itself.
 */
@ExtendWith(PostgresExtension.class)
class FencingTokenCrashIntegrationTest {

  private static final Duration WITHIN = Duration.ofSeconds(60);
  private static final int CRASHES = 2;

  /** How a crash is struck. */
  enum Crash {
    IMMEDIATE_STOP,
    BACKEND_SIGKILL,
    POSTMASTER_SIGKILL
  }

  static Stream<Arguments> crashes() {
    return Stream.of(Crash.values())
        .flatMap(c -> Stream.of(TakeoverMode.POLL, TakeoverMode.WAIT).map(m -> Arguments.of(c, m)));
  }

  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("crashes")
  void theNextTermsTokenIsLargerAfterACrashRightAfterAGrant(
      Crash crash, TakeoverMode mode, TestDatabase db) {
    Assumptions.assumeTrue(db.server().supportsRestart(), "needs a server the tests can crash");
    RecordingListener l = new RecordingListener();
    int xidWentBack = 0;
    try (LeaderLoop loop =
        LeaderLoop.builder(db.dataSource(), TestKeys.next())
            .candidateId("crash-" + mode.name().toLowerCase(java.util.Locale.ROOT))
            .takeover(mode)
            .failurePolicy(FailurePolicy.STEP_DOWN)
            .retryInterval(Duration.ofMillis(100))
            .refreshInterval(Duration.ofMillis(200))
            .timing(FailoverTiming.DEFAULT.withHeartbeatInterval(Duration.ofMillis(100)))
            .listener(l)
            .build()) {
      loop.start(ctx -> {});
      await().atMost(WITHIN).until(() -> l.acquired().size() == 1);
      for (int i = 1; i <= CRASHES; i++) {
        Term before = l.acquired().get(i - 1);

        strike(crash, db, before.backendPid());

        int terms = i + 1;
        await().atMost(WITHIN).until(() -> l.acquired().size() >= terms);
        FencingToken was = before.fencingToken();
        FencingToken now = l.acquired().get(i).fencingToken();
        assertThat(now).as("%s after %s", now, was).isGreaterThan(was);
        assertThat(now.toString()).isGreaterThan(was.toString());
        if (Long.compareUnsigned(now.xid(), was.xid()) <= 0) {
          xidWentBack++;
        }
      }
    }
    System.out.printf(
        "token crash check %s %s: %d of %d crashes handed out an xid again%n",
        crash, mode, xidWentBack, CRASHES);
  }

  private static void strike(Crash crash, TestDatabase db, int leaderPid) {
    switch (crash) {
      case IMMEDIATE_STOP -> db.server().restart(ShutdownMode.IMMEDIATE);
      case BACKEND_SIGKILL -> db.server().killBackend(leaderPid);
      case POSTMASTER_SIGKILL -> db.server().restart(ShutdownMode.KILL);
    }
  }
}
