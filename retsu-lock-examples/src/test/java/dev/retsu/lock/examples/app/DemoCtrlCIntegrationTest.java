package dev.retsu.lock.examples.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.testing.ChildJvm;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Ctrl-C in the terminal that runs the demo: the terminal sends SIGINT to the whole foreground
 * process group (the demo, its collectors and its PostgreSQL), here by {@code kill -INT} to the
 * group of a demo started in a session of its own. The demo cleans up and says so, and prints no
 * stack trace and no "demo failed".
 */
class DemoCtrlCIntegrationTest {

  /**
   * Ctrl-C at three moments: while the collectors start, once the replicas are shown, and while a
   * standby takes over from the stopped leader.
   */
  @ParameterizedTest
  @ValueSource(
      strings = {"launched 2 collector JVMs", "what each replica reports", "stopping the leader"})
  void ctrlCDuringTheDemoCleansUpQuietly(String moment) throws Exception {
    Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/setsid")), "needs setsid");
    List<String> command = new ArrayList<>(List.of("/usr/bin/setsid"));
    command.addAll(
        ChildJvm.javaCommand(
            List.of("-Xmx128m"),
            Main.class,
            List.of("demo", "--quick", "--base-port", Integer.toString(ChildJvm.freePort()))));
    try (ChildJvm demo = new ChildJvm("demo", new ProcessBuilder(command)) {}) {
      await()
          .atMost(Duration.ofSeconds(90))
          .failFast("the demo ended before: " + moment, () -> !demo.process.isAlive())
          .until(() -> demo.logged(moment));
      long group = demo.process.pid(); // setsid made the demo's JVM its session's group leader
      Process kill = new ProcessBuilder("kill", "-INT", "--", "-" + group).inheritIO().start();
      assertThat(kill.waitFor(10, TimeUnit.SECONDS)).isTrue();
      await().atMost(Duration.ofSeconds(60)).until(demo::exitedAndDrained);
      int at = indexOfLast(demo.lines(), moment);
      List<String> after = demo.lines().subList(at, demo.lines().size());
      assertThat(after)
          .as("what the demo printed after Ctrl-C")
          .anyMatch(l -> l.contains("cleaning up"))
          .noneMatch(l -> l.startsWith("\tat ") || l.matches("^\\s+at .*"))
          .noneMatch(l -> l.contains("demo failed"))
          .noneMatch(l -> l.contains("load stopped"));
    }
  }

  private static int indexOfLast(List<String> lines, String fragment) {
    for (int i = lines.size() - 1; i >= 0; i--) {
      if (lines.get(i).contains(fragment)) {
        return i;
      }
    }
    return 0;
  }
}
