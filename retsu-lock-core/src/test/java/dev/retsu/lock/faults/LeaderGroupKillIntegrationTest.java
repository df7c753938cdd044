package dev.retsu.lock.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.LockKey;
import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.faults.GroupFaults.Where;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.ProcessOutput;
import dev.retsu.lock.testing.TermChecker;
import dev.retsu.lock.testing.TestDatabase;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The fault suite's group scenario that needs separate processes: three {@code LeaderGroup} members
 * in their own JVMs ({@link GroupFaultMember}) share 24 keys, each key's task taking time ({@link
 * TimedTask}), and one member is killed with SIGKILL where the round's seeded {@link Random} says
 * ({@link Where}): while one of its keys' tasks is before its check, between check and effect,
 * inside an open transaction, just after it, inside its {@code close()}, or, for a member that just
 * joined, at its first acquisition while the others yield to it. The others take its keys. Every
 * key's timeline, stamped on the machine's one monotonic clock, is checked with {@link
 * TermChecker}: no key ever has two acting owners, tokens strictly increase, every term of a living
 * member ends with a reason.
 */
@ExtendWith(PostgresExtension.class)
class LeaderGroupKillIntegrationTest {

  private static final int N = 24;
  private static final Duration WITHIN = Duration.ofSeconds(60);

  private final List<Child> children = new ArrayList<>();
  private final GroupRecorder rec = new GroupRecorder();
  private final List<String> stray = new CopyOnWriteArrayList<>();

  /** One member process and its last reported count. */
  private final class Child {
    final String id;
    final Process process;
    volatile int held;
    volatile boolean killed;

    Child(String id, Process process) {
      this.id = id;
      this.process = process;
      ProcessOutput.follow(process, "retsu-lock-test-group-kill-" + id, this::accept);
    }

    private void accept(String line) {
      if (line.startsWith("HELD ")) {
        held = Integer.parseInt(line.substring(5));
      } else if (!rec.accept(id, line) && !line.startsWith("ARMED ") && !line.equals("CLOSED")) {
        stray.add(id + ": " + line);
      }
    }

    void send(String command) {
      Fleet.send(process, id, command);
    }

    void kill9() throws InterruptedException {
      killed = true;
      // SIGKILL through the process handle: Process.destroyForcibly() also closes our end of its
      // stdout, and a reader inside a read then fails with "Stream closed" and loses the lines
      // the member wrote before it died. The handle leaves the pipe to be read to its end.
      process.toHandle().destroyForcibly();
      assertThat(process.waitFor(10, TimeUnit.SECONDS)).isTrue();
    }
  }

  @AfterEach
  void stopChildren() throws Exception {
    for (Child c : children) {
      c.process.destroyForcibly();
      c.process.waitFor(10, TimeUnit.SECONDS);
    }
  }

  private Child launch(TestDatabase db, String group, long first, String id, long seed)
      throws IOException {
    ProcessBuilder pb =
        new ProcessBuilder(
            GroupFaultMember.command(
                db.jdbcUrl(),
                db.user(),
                db.password().isEmpty() ? "-" : db.password(),
                group,
                Long.toString(first),
                Integer.toString(N),
                id,
                Long.toString(seed),
                Long.toString(GroupFaults.TASK.minMs()),
                Long.toString(GroupFaults.TASK.maxMs()),
                GroupFaults.TASK.mode()));
    Files.createDirectories(Path.of("target", "fault-logs"));
    pb.redirectError(Path.of("target", "fault-logs", group + "-" + id + ".log").toFile());
    Child c = new Child(id, pb.start());
    children.add(c);
    return c;
  }

  private static boolean balanced(List<Child> live) {
    int quota = (N + live.size() - 1) / live.size();
    return live.stream().mapToInt(c -> c.held).sum() == N
        && live.stream().allMatch(c -> c.held <= quota);
  }

  @ParameterizedTest(name = "round {0}")
  @MethodSource("dev.retsu.lock.faults.GroupFaults#rounds")
  void killMinus9OfAMemberProcessAtARandomPhaseNeverGivesAKeyTwoActingOwners(
      int round, TestDatabase db) throws Exception {
    String scenario = "group-kill-9";
    long seed = GroupFaults.seed(scenario, round);
    Random draw = new Random(seed);
    Where where = GroupFaults.where(scenario, round);
    long first = TestKeys.nextValue() + 1_000_000;
    for (int i = 1; i < N; i++) {
      TestKeys.nextValue(); // reserve first .. first + N - 1: another round takes the next N
    }
    String group = "kill-" + Long.toHexString(first);
    List<LockKey> keys = LongStream.range(first, first + N).mapToObj(LockKey::of).toList();
    GroupFaults.announce(scenario, round, seed, "kill -9 @" + where);
    List<Child> live = new ArrayList<>();
    for (String id : List.of("a", "b", "c")) {
      live.add(launch(db, group, first, id, draw.nextLong()));
    }
    await().atMost(WITHIN).until(() -> balanced(live));
    rec.awaitEffects(keys, 1, WITHIN);

    long since = System.nanoTime();
    Child victim;
    if (where == Where.JOIN) {
      victim = launch(db, group, first, "d", draw.nextLong());
      rec.awaitStamp(victim.id, "ACQUIRED", since, WITHIN);
    } else {
      victim = live.get(draw.nextInt(live.size()));
      victim.send(where.arm().command());
      if (where == Where.CLOSE) {
        victim.send("CLOSE");
      }
      rec.awaitStamp(victim.id, "PHASE", since, WITHIN);
    }
    victim.kill9();
    long struck = System.nanoTime();
    rec.strike(new GroupRecorder.Strike(round, "kill-9@" + where, struck, true, victim.id, null));
    live.remove(victim);

    await().atMost(WITHIN).until(() -> balanced(live));
    for (Child survivor : live) {
      survivor.send("CLOSE"); // a graceful close
      assertThat(survivor.process.waitFor(30, TimeUnit.SECONDS)).isTrue();
    }
    assertThat(stray).isEmpty();
    // The killed member's keys were taken over: each of its terms that the kill cut (no LOST) is
    // followed by a term of another member.
    int cut = 0;
    for (List<TermChecker.Event> es : rec.byKey.values()) {
      List<TermChecker.Event> sorted =
          es.stream().sorted(Comparator.comparingLong(TermChecker.Event::nanos)).toList();
      for (TermChecker.Event acq : sorted) {
        if (!acq.kind().equals("ACQUIRED") || !acq.member().equals(victim.id)) {
          continue;
        }
        if (GroupRecorder.lostOf(sorted, victim.id, acq.fields().get(0)).isEmpty()) {
          cut++;
          assertThat(sorted)
              .as("a term of %s on %s cut by the kill is taken over", victim.id, acq)
              .anyMatch(
                  e ->
                      e.kind().equals("ACQUIRED")
                          && !e.member().equals(victim.id)
                          && e.nanos() > acq.nanos());
        }
      }
    }
    if (where != Where.CLOSE) {
      assertThat(cut).as("terms the kill cut").isPositive();
    }
    GroupFaults.judge(scenario, round, "kill-9@" + where, rec.analyse(Set.of(victim.id)));
  }
}
