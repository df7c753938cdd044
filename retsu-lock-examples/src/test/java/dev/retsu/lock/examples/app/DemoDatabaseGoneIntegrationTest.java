package dev.retsu.lock.examples.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.testing.ChildJvm;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The demo's PostgreSQL dies under it: the demo says so at once, with each collector's state,
 * instead of waiting out a takeover bound and saying only that no collector became leader.
 */
class DemoDatabaseGoneIntegrationTest {

  private static final Pattern URL =
      Pattern.compile("PostgreSQL is up: (jdbc:\\S+) \\(user (\\S+)\\)");

  @Test
  void whenItsDatabaseDiesTheDemoSaysSoAtOnce() throws Exception {
    List<String> command =
        ChildJvm.javaCommand(
            List.of("-Xmx128m"),
            Main.class,
            List.of("demo", "--quick", "--base-port", Integer.toString(ChildJvm.freePort())));
    try (ChildJvm demo = new ChildJvm("demo", new ProcessBuilder(command)) {}) {
      await()
          .atMost(Duration.ofSeconds(90))
          .failFast(
              "the demo ended before it launched the collectors", () -> !demo.process.isAlive())
          .until(() -> demo.logged("launched 2 collector JVMs"));
      Matcher url =
          demo.lines().stream().map(URL::matcher).filter(Matcher::find).findFirst().orElseThrow();
      long postmaster;
      try (Connection c = DriverManager.getConnection(url.group(1), url.group(2), "");
          Statement s = c.createStatement();
          ResultSet rs = // the first line of postmaster.pid, in the data directory
              s.executeQuery("SELECT split_part(pg_read_file('postmaster.pid'), E'\\n', 1)::int")) {
        rs.next();
        postmaster = rs.getLong(1);
      }
      ProcessHandle.of(postmaster).orElseThrow().destroyForcibly(); // the database dies

      await().atMost(Duration.ofSeconds(60)).until(demo::exitedAndDrained);
      assertThat(demo.process.exitValue()).as("the demo failed").isEqualTo(Main.FAILED);
      assertThat(demo.lines())
          .anyMatch(
              l ->
                  l.contains("demo failed")
                      && l.contains("PostgreSQL stopped (its server process exited)")
                      && l.contains("collector-a "))
          .noneMatch(l -> l.contains("no collector became leader"));
    }
  }
}
