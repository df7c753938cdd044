package dev.retsu.lock.examples.app;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class MainTest {

  private final ByteArrayOutputStream out = new ByteArrayOutputStream();
  private final ByteArrayOutputStream err = new ByteArrayOutputStream();

  private int run(String... args) {
    return Main.run(
        args,
        Map.of(),
        new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
  }

  @ParameterizedTest
  @ValueSource(strings = {"collector", "load", "demo", "postgres"})
  void everyCommandHasHelp(String command) {
    assertThat(run(command, "--help")).isEqualTo(Main.OK);
    assertThat(out.toString(StandardCharsets.UTF_8))
        .startsWith("Usage: java -jar retsu-lock-examples.jar " + command)
        .contains("--help");
  }

  @Test
  void collectorHelpListsEveryVariableWithItsDefault() {
    run("collector", "--help");
    assertThat(out.toString(StandardCharsets.UTF_8))
        .contains("RETSU_DATABASE__URL")
        .contains("RETSU_DATABASE__USER")
        .contains("RETSU_DATABASE__PASSWORD")
        .contains("RETSU_DATABASE__POOL_SIZE")
        .contains("(default 4)")
        .contains("RETSU_WORKER__MANAGEMENT__PORT")
        .contains("(default 24350)")
        .contains("RETSU_WORKER__STATE_COLLECTOR__INTERVAL")
        .contains("(default 15s)")
        .contains(CollectorCommand.ACQUIRED_LINE)
        .doesNotContain("RETSU_EXAMPLES__PARENT_PID");
  }

  @Test
  void overviewOnHelpAndUsageErrorWithoutCommand() {
    assertThat(run("--help")).isEqualTo(Main.OK);
    assertThat(out.toString(StandardCharsets.UTF_8))
        .contains("collector", "load", "demo", "postgres");
    assertThat(run()).isEqualTo(Main.USAGE);
    assertThat(run("collect")).isEqualTo(Main.USAGE);
    assertThat(err.toString(StandardCharsets.UTF_8)).contains("Unknown command 'collect'");
  }

  @Test
  void aBadSettingIsAUsageErrorWithAClearMessage() {
    assertThat(run("collector", "--management-port", "0")).isEqualTo(Main.USAGE);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .isEqualTo(
            "Error: --management-port must be a TCP port within 1..65535, but was '0'"
                + System.lineSeparator());
  }
}
