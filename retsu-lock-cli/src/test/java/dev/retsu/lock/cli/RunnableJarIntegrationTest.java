package dev.retsu.lock.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.AdvisoryLock;
import dev.retsu.lock.AdvisoryLockLease;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The packaged jar runs on its own: {@code java -jar retsu-lock-cli-<version>-all.jar}. */
@ExtendWith(PostgresExtension.class)
class RunnableJarIntegrationTest {

  @Test
  void theBuiltJarRunsWithJavaDashJarAndAnswersWho(TestDatabase db) throws Exception {
    Path jar = Path.of(System.getProperty("retsu.cli.jar", "target/none.jar"));
    assertThat(jar).as("the shaded jar; failsafe runs after package").isRegularFile();
    LockKey key = LockKey.of(4242L);
    try (AdvisoryLockLease lease =
        AdvisoryLock.builder(db.dataSource(), key)
            .candidateId("jar-holder")
            .build()
            .tryAcquire()
            .orElseThrow()) {
      Path java = Path.of(System.getProperty("java.home"), "bin", "java");
      ProcessBuilder pb =
          new ProcessBuilder(
                  java.toString(),
                  "-jar",
                  jar.toString(),
                  "who",
                  "--url",
                  db.jdbcUrl(),
                  "--user",
                  db.user(),
                  "--key",
                  "4242",
                  "--json")
              .redirectErrorStream(false);
      pb.environment().put("PGPASSWORD", db.password());
      Path out = Files.createTempFile("retsu-lock-cli", ".out");
      Path err = Files.createTempFile("retsu-lock-cli", ".err");
      pb.redirectOutput(out.toFile()).redirectError(err.toFile());
      Process p = pb.start();
      await().atMost(Duration.ofSeconds(30)).until(() -> !p.isAlive());
      String stdout = Files.readString(out, StandardCharsets.UTF_8);
      String stderr = Files.readString(err, StandardCharsets.UTF_8);
      assertThat(p.waitFor(1, TimeUnit.SECONDS)).isTrue();
      assertThat(p.exitValue()).as("exit code; stderr: %s", stderr).isZero();
      assertThat(List.of(stdout.split("\n"))).hasSize(1);
      assertThat(stdout)
          .startsWith("{\"key\":{\"bigint\":\"4242\"")
          .contains("\"candidate\":\"jar-holder\"")
          .contains("\"pid\":" + lease.backendPid());
      assertThat(stderr).as("nothing on stderr: the library logs only warnings").isEmpty();

      // --watch streams until a signal; the shutdown hook stops it and the process ends
      List<String> watchCommand = new ArrayList<>(pb.command());
      watchCommand.add("--watch");
      Path watchOut = Files.createTempFile("retsu-lock-cli", ".watch");
      ProcessBuilder wb = new ProcessBuilder(watchCommand);
      wb.environment().put("PGPASSWORD", db.password());
      Process w = wb.redirectOutput(watchOut.toFile()).redirectError(err.toFile()).start();
      try {
        await()
            .atMost(Duration.ofSeconds(30))
            .until(() -> Files.readString(watchOut).contains("\"cause\":\"READ\""));
        assertThat(Files.readString(watchOut)).contains("\"candidate\":\"jar-holder\"");
      } finally {
        w.destroy(); // SIGTERM, as Ctrl-C's SIGINT: the shutdown hook runs
      }
      assertThat(w.waitFor(10, TimeUnit.SECONDS)).as("the watch ends on a signal").isTrue();
      assertThat(w.exitValue()).as("killed by SIGTERM").isEqualTo(143);
    }
  }

  /**
   * {@code --help} names the jar the build makes: every {@code java -jar NAME} line of the usage,
   * with the version in place of {@code <version>}, is the built jar's file name.
   */
  @Test
  void theHelpNamesTheJarTheBuildMakes() throws Exception {
    Path jar = Path.of(System.getProperty("retsu.cli.jar", "target/none.jar"));
    assertThat(jar).as("the shaded jar; failsafe runs after package").isRegularFile();
    String version = System.getProperty("retsu.cli.version", "unknown");
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    Path out = Files.createTempFile("retsu-lock-cli", ".help");
    Process p =
        new ProcessBuilder(java.toString(), "-jar", jar.toString(), "--help")
            .redirectErrorStream(true)
            .redirectOutput(out.toFile())
            .start();
    await().atMost(Duration.ofSeconds(30)).until(() -> !p.isAlive());
    assertThat(p.exitValue()).isZero();
    List<String> named = new ArrayList<>();
    Matcher m =
        Pattern.compile("java -jar (\\S+)").matcher(Files.readString(out, StandardCharsets.UTF_8));
    while (m.find()) {
      named.add(m.group(1).replace("<version>", version));
    }
    assertThat(named).isNotEmpty().allMatch(n -> n.equals(jar.getFileName().toString()));
  }
}
