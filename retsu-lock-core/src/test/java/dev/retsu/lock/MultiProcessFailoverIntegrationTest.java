package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.faults.FaultCandidate;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.ProcessOutput;
import dev.retsu.lock.testing.TestDatabase;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Candidates as separate OS processes: the leader dies or loses its session; a standby leads. */
@ExtendWith(PostgresExtension.class)
class MultiProcessFailoverIntegrationTest {

  private static final Duration WITHIN = Duration.ofSeconds(60);
  private final List<Candidate> candidates = new ArrayList<>();

  /** One candidate JVM and the lines it printed. */
  static final class Candidate {
    final String id;
    final Process process;
    final List<String> lines = new CopyOnWriteArrayList<>();

    Candidate(String id, Process process) {
      this.id = id;
      this.process = process;
      ProcessOutput.follow(
          process, "retsu-lock-test-reader-" + id, line -> lines.add(FaultCandidate.event(line)));
    }

    boolean acquired() {
      return lines.stream().anyMatch(l -> l.startsWith("ACQUIRED"));
    }

    Optional<String[]> acquisition() {
      return lines.stream()
          .filter(l -> l.startsWith("ACQUIRED"))
          .findFirst()
          .map(l -> l.split(" "));
    }
  }

  @AfterEach
  void killAll() throws InterruptedException {
    for (Candidate c : candidates) {
      c.process.destroyForcibly();
      c.process.waitFor(10, TimeUnit.SECONDS);
    }
  }

  private Candidate launch(TestDatabase db, String id, long key) throws IOException {
    ProcessBuilder pb =
        new ProcessBuilder(FaultCandidate.exitingOnLoss(db.jdbcUrl(), db.user(), id, key));
    pb.redirectError(Path.of("target", "candidate-" + id + ".log").toFile());
    Candidate c = new Candidate(id, pb.start());
    candidates.add(c);
    return c;
  }

  @Test
  void standbyTakesOverAfterKillMinus9OfTheLeaderProcess(TestDatabase db) throws Exception {
    long key = TestKeys.nextValue();
    Candidate a = launch(db, "proc-a", key);
    Candidate b = launch(db, "proc-b", key);
    await().atMost(WITHIN).until(() -> a.acquired() || b.acquired());
    Candidate leader = a.acquired() ? a : b;
    Candidate standby = leader == a ? b : a;
    await().atMost(WITHIN).until(() -> leader.lines.stream().anyMatch(l -> l.startsWith("EFFECT")));
    assertThat(standby.acquired()).isFalse();

    leader.process.destroyForcibly(); // SIGKILL: no shutdown hook, the OS closes the socket
    assertThat(leader.process.waitFor(10, TimeUnit.SECONDS)).isTrue();

    await().atMost(WITHIN).until(standby::acquired);
    String oldToken = leader.acquisition().orElseThrow()[2];
    String newToken = standby.acquisition().orElseThrow()[2];
    assertThat(token(newToken).isNewerThan(token(oldToken))).isTrue();
  }

  @Test
  void terminatedLeaderSessionEndsTheLeaderProcessWithTheSqlState(TestDatabase db)
      throws Exception {
    long key = TestKeys.nextValue();
    Candidate a = launch(db, "proc-c", key);
    await().atMost(WITHIN).until(a::acquired);
    Candidate b = launch(db, "proc-d", key);
    int pid = Integer.parseInt(a.acquisition().orElseThrow()[3]);

    assertThat(db.terminateBackend(pid)).isTrue();

    assertThat(a.process.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(a.process.exitValue()).isEqualTo(3);
    assertThat(a.lines).contains("LOST 1 SESSION_LOST", "EXIT SESSION_LOST 57P01");
    await().atMost(WITHIN).until(b::acquired);
  }

  @Test
  void sigtermClosesTheLoopAndReleasesTheLockForTheStandby(TestDatabase db) throws Exception {
    long key = TestKeys.nextValue();
    Candidate a = launch(db, "proc-e", key);
    await().atMost(WITHIN).until(a::acquired);
    Candidate b = launch(db, "proc-f", key);

    // SIGTERM (through the handle, which keeps our end of its stdout open): the shutdown hook
    // closes the loop.
    assertThat(a.process.toHandle().destroy()).isTrue();

    assertThat(a.process.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(a.lines).contains("LOST 1 CLOSED");
    await().atMost(WITHIN).until(b::acquired);
  }

  private static FencingToken token(String text) {
    return FencingToken.parse(text);
  }
}
