package dev.retsu.lock.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.LockKey;
import dev.retsu.lock.TestKeys;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.ProcessOutput;
import dev.retsu.lock.testing.TermChecker;
import dev.retsu.lock.testing.TestDatabase;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The fault suite's group scenario that needs separate processes: three {@code LeaderGroup} members
 * in their own JVMs ({@link GroupFaultMember}) share 60 keys, one is killed with SIGKILL, the
 * others take its keys. Every key's timeline, stamped on the machine's one monotonic clock, is
 * checked with {@link TermChecker}: no key ever has two acting owners, tokens strictly increase.
 */
@ExtendWith(PostgresExtension.class)
class LeaderGroupKillIntegrationTest {

  private static final int N = 60;
  private static final Duration WITHIN = Duration.ofSeconds(60);

  private final List<Child> children = new ArrayList<>();
  private final GroupRecorder rec = new GroupRecorder();
  private final List<String> stray = new CopyOnWriteArrayList<>();

  /** One member process and its last reported count. */
  private final class Child {
    final String id;
    final Process process;
    volatile int held;

    Child(String id, Process process) {
      this.id = id;
      this.process = process;
      ProcessOutput.follow(process, "retsu-lock-test-group-kill-" + id, this::accept);
    }

    private void accept(String line) {
      String[] p = line.split(" ");
      if (p[0].equals("HELD")) {
        held = Integer.parseInt(p[1]);
      } else if (p[0].equals("T") && p.length >= 5) {
        LockKey key = LockKey.of(Long.parseLong(p[3]));
        List<String> fields = List.of(p).subList(4, p.length);
        rec.byKey
            .computeIfAbsent(key, k -> new CopyOnWriteArrayList<>())
            .add(new TermChecker.Event(Long.parseLong(p[1]), id, p[2], fields));
      } else if (!p[0].equals("CLOSED")) {
        stray.add(id + ": " + line);
      }
    }
  }

  @AfterEach
  void stopChildren() throws Exception {
    for (Child c : children) {
      c.process.destroyForcibly();
      c.process.waitFor(10, TimeUnit.SECONDS);
    }
  }

  private Child launch(TestDatabase db, String group, long first, String id) throws Exception {
    ProcessBuilder pb =
        new ProcessBuilder(
            Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "-Xmx96m",
            "-XX:TieredStopAtLevel=1",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-cp",
            System.getProperty("java.class.path"),
            GroupFaultMember.class.getName(),
            db.jdbcUrl(),
            db.user(),
            db.password().isEmpty() ? "-" : db.password(),
            group,
            Long.toString(first),
            Integer.toString(N),
            id);
    pb.redirectError(ProcessBuilder.Redirect.INHERIT);
    Child c = new Child(id, pb.start());
    children.add(c);
    return c;
  }

  private static boolean balanced(List<Child> live) {
    int quota = (N + live.size() - 1) / live.size();
    return live.stream().mapToInt(c -> c.held).sum() == N
        && live.stream().allMatch(c -> c.held <= quota);
  }

  @Test
  void killMinus9OfAMemberProcessNeverGivesAKeyTwoActingOwners(TestDatabase db) throws Exception {
    long first = TestKeys.nextValue() + 1_000_000;
    String group = "kill-" + Long.toHexString(first);
    Child a = launch(db, group, first, "a");
    Child b = launch(db, group, first, "b");
    Child c = launch(db, group, first, "c");
    await().atMost(WITHIN).until(() -> balanced(List.of(a, b, c)));
    // Let every key run a few refreshes on its owner.
    await()
        .atMost(WITHIN)
        .until(
            () ->
                rec.byKey.size() == N
                    && rec.byKey.values().stream()
                        .allMatch(
                            es -> es.stream().filter(e -> e.kind().equals("EFFECT")).count() >= 3));

    b.process.destroyForcibly(); // SIGKILL
    b.process.waitFor(10, TimeUnit.SECONDS);

    await().atMost(WITHIN).until(() -> balanced(List.of(a, c)));
    Set<String> killedMembers = Set.of("b");
    for (Child survivor : List.of(a, c)) {
      survivor.process.getOutputStream().close(); // EOF: a graceful close
      assertThat(survivor.process.waitFor(30, TimeUnit.SECONDS)).isTrue();
    }
    ConcurrentHashMap<LockKey, List<TermChecker.Event>> byKey = new ConcurrentHashMap<>(rec.byKey);
    List<TermChecker.Violation> violations =
        TermChecker.analyseEach(
            byKey, killedMembers, (key, acquired) -> killedMembers.contains(acquired.member()));
    assertThat(violations).isEmpty();
    assertThat(stray).isEmpty();
    // The killed member's keys were taken over: each key whose term of b never ended (the kill
    // cut it) has a later term of a or c.
    int cut = 0;
    int takenOver = 0;
    for (List<TermChecker.Event> es : byKey.values()) {
      List<TermChecker.Event> sorted =
          es.stream().sorted((x, y) -> Long.compare(x.nanos(), y.nanos())).toList();
      for (TermChecker.Event acq : sorted) {
        if (!acq.kind().equals("ACQUIRED") || !acq.member().equals("b")) {
          continue;
        }
        String term = acq.fields().get(0);
        boolean ended =
            sorted.stream()
                .anyMatch(
                    e ->
                        e.member().equals("b")
                            && e.kind().equals("LOST")
                            && e.fields().get(0).equals(term));
        if (!ended) {
          cut++;
          if (sorted.stream()
              .anyMatch(
                  e ->
                      e.kind().equals("ACQUIRED")
                          && !e.member().equals("b")
                          && e.nanos() > acq.nanos())) {
            takenOver++;
          }
        }
      }
    }
    assertThat(cut).isEqualTo(N / 3);
    assertThat(takenOver).isEqualTo(cut);
  }
}
