package dev.retsu.lock.examples.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class SettingsTest {

  private static final String URL = "jdbc:postgresql://db:5432/retsu";

  @Test
  void collectorDefaultsAreTheRetsuWorkersWithAPoolSizedForTheCollector() {
    Settings.Collector c = Settings.Collector.from(List.of(), Map.of());

    assertThat(c.database().url()).isEmpty();
    assertThat(c.database().poolSize()).isEqualTo(4);
    assertThat(c.managementPort()).isEqualTo(24350);
    assertThat(c.managementAddress()).isEqualTo("0.0.0.0");
    assertThat(c.interval()).isEqualTo(Duration.ofSeconds(15));
    assertThat(c.takeover()).isEqualTo(dev.retsu.lock.TakeoverMode.POLL);
    assertThat(c.candidateId()).isEmpty();
    assertThat(c.parentPid()).isEmpty();
  }

  @Test
  void readsNestedEnvironmentVariables() {
    Settings.Collector c =
        Settings.Collector.from(
            List.of(),
            Map.of(
                "RETSU_DATABASE__URL", URL,
                "RETSU_DATABASE__USER", "retsu",
                "RETSU_DATABASE__PASSWORD", "secret",
                "RETSU_DATABASE__POOL_SIZE", "6",
                "RETSU_WORKER__MANAGEMENT__PORT", "24351",
                "RETSU_WORKER__STATE_COLLECTOR__INTERVAL", "PT2S",
                "RETSU_WORKER__STATE_COLLECTOR__CANDIDATE_ID", "collector-b"));

    assertThat(c.database().url()).contains(URL);
    assertThat(c.database().user()).contains("retsu");
    assertThat(c.database().password()).contains("secret");
    assertThat(c.database().poolSize()).isEqualTo(6);
    assertThat(c.managementPort()).isEqualTo(24351);
    assertThat(c.interval()).isEqualTo(Duration.ofSeconds(2));
    assertThat(c.candidateId()).contains("collector-b");
    assertThat(c.database().toString()).doesNotContain("secret");
  }

  @Test
  void aFlagWinsOverItsVariableInBothSpellings() {
    Settings.Collector c =
        Settings.Collector.from(
            List.of("--management-port", "24360", "--interval=500ms"),
            Map.of(
                "RETSU_WORKER__MANAGEMENT__PORT", "24351",
                "RETSU_WORKER__STATE_COLLECTOR__INTERVAL", "15s"));

    assertThat(c.managementPort()).isEqualTo(24360);
    assertThat(c.interval()).isEqualTo(Duration.ofMillis(500));
  }

  @Test
  void parsesIso8601AndShortDurations() {
    assertThat(Options.parseDuration("PT15S")).isEqualTo(Duration.ofSeconds(15));
    assertThat(Options.parseDuration("pt1m30s")).isEqualTo(Duration.ofSeconds(90));
    assertThat(Options.parseDuration("15s")).isEqualTo(Duration.ofSeconds(15));
    assertThat(Options.parseDuration("1.5s")).isEqualTo(Duration.ofMillis(1500));
    assertThat(Options.parseDuration("250ms")).isEqualTo(Duration.ofMillis(250));
    assertThat(Options.parseDuration("2m")).isEqualTo(Duration.ofMinutes(2));
    assertThat(Options.parseDuration("1h")).isEqualTo(Duration.ofHours(1));
    assertThat(Options.format(Duration.ofSeconds(15))).isEqualTo("15s");
    assertThat(Options.format(Duration.ofMillis(1500))).isEqualTo("1500ms");
  }

  @Test
  void aBadIntervalNamesTheVariableAndTheValue() {
    assertThatThrownBy(
            () ->
                Settings.Collector.from(
                    List.of(), Map.of("RETSU_WORKER__STATE_COLLECTOR__INTERVAL", "15")))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "RETSU_WORKER__STATE_COLLECTOR__INTERVAL must be a positive duration such as 15s,"
                + " 500ms, 2m or PT15S, but was '15'");
    assertThatThrownBy(
            () ->
                Settings.Collector.from(
                    List.of(), Map.of("RETSU_WORKER__STATE_COLLECTOR__INTERVAL", "PT0S")))
        .hasMessage(
            "RETSU_WORKER__STATE_COLLECTOR__INTERVAL must be a positive duration of at most one"
                + " day, but was 'PT0S'");
  }

  @Test
  void takeoverModeComesFromTheEnvironmentOrTheFlag() {
    assertThat(
            Settings.Collector.from(
                    List.of(), Map.of("RETSU_WORKER__STATE_COLLECTOR__TAKEOVER", "WAIT"))
                .takeover())
        .isEqualTo(dev.retsu.lock.TakeoverMode.WAIT);
    assertThat(Settings.Collector.from(List.of("--takeover", "poll"), Map.of()).takeover())
        .isEqualTo(dev.retsu.lock.TakeoverMode.POLL);
    assertThatThrownBy(
            () ->
                Settings.Collector.from(
                    List.of(), Map.of("RETSU_WORKER__STATE_COLLECTOR__TAKEOVER", "eager")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("RETSU_WORKER__STATE_COLLECTOR__TAKEOVER must be one of poll, wait")
        .hasMessageContaining("'eager'");
  }

  @Test
  void aBadFlagValueNamesTheFlag() {
    assertThatThrownBy(() -> Settings.Collector.from(List.of("--interval", "soon"), Map.of()))
        .hasMessage(
            "--interval must be a positive duration such as 15s, 500ms, 2m or PT15S, but was"
                + " 'soon'");
  }

  @Test
  void aBadPortOrPoolSizeIsRefused() {
    assertThatThrownBy(
            () ->
                Settings.Collector.from(
                    List.of(), Map.of("RETSU_WORKER__MANAGEMENT__PORT", "99999")))
        .hasMessage(
            "RETSU_WORKER__MANAGEMENT__PORT must be a TCP port within 1..65535, but was '99999'");
    assertThatThrownBy(
            () ->
                Settings.Collector.from(
                    List.of(), Map.of("RETSU_WORKER__MANAGEMENT__PORT", "http")))
        .hasMessage(
            "RETSU_WORKER__MANAGEMENT__PORT must be a TCP port within 1..65535, but was 'http'");
    assertThatThrownBy(
            () -> Settings.Collector.from(List.of(), Map.of("RETSU_DATABASE__POOL_SIZE", "1")))
        .hasMessage(
            "RETSU_DATABASE__POOL_SIZE must be a pool size (the leader keeps one connection)"
                + " within 2..1000, but was '1'");
  }

  @Test
  void aNonJdbcUrlIsRefusedWithoutShowingItsPassword() {
    assertThatThrownBy(
            () ->
                Settings.Collector.from(
                    List.of(), Map.of("RETSU_DATABASE__URL", "postgres://app:hunter2@db/retsu")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("must be a JDBC URL starting with jdbc:postgresql://")
        .hasMessageContaining("postgres://app:****@db/retsu")
        .hasMessageNotContaining("hunter2");
    assertThatThrownBy(
            () -> Settings.Collector.from(List.of("--database-url", "mysql://db/x"), Map.of()))
        .hasMessage(
            "--database-url must be a JDBC URL starting with jdbc:postgresql://, but was"
                + " 'mysql://db/x'");
  }

  @Test
  void unknownFlagsAndMissingValuesAreRefused() {
    assertThatThrownBy(() -> Settings.Collector.from(List.of("--port", "1"), Map.of()))
        .hasMessage("Unknown option '--port' for collector; see 'collector --help'");
    assertThatThrownBy(() -> Settings.Collector.from(List.of("--interval"), Map.of()))
        .hasMessage("--interval needs a value");
  }

  @Test
  void loadNeedsADatabaseAndHasModestDefaults() {
    assertThatThrownBy(() -> Settings.Load.from(List.of(), Map.of()))
        .hasMessageStartingWith("RETSU_DATABASE__URL (or --database-url) is required for load");

    Settings.Load load = Settings.Load.from(List.of(), Map.of("RETSU_DATABASE__URL", URL));
    assertThat(load.queues()).isEqualTo(4);
    assertThat(load.ratePerSecond()).isEqualTo(20);
    assertThat(load.duration()).isEmpty();
    assertThat(load.progressInterval()).isEqualTo(Duration.ofSeconds(5));

    Settings.Load bounded =
        Settings.Load.from(
            List.of("--queues", "2", "--rate", "100", "--duration", "3s"),
            Map.of("RETSU_DATABASE__URL", URL));
    assertThat(bounded.queues()).isEqualTo(2);
    assertThat(bounded.ratePerSecond()).isEqualTo(100);
    assertThat(bounded.duration()).contains(Duration.ofSeconds(3));
  }

  @Test
  void demoDefaultsAndItsQuickMode() {
    Settings.Demo full = Settings.Demo.from(List.of(), Map.of());
    assertThat(full.collectors()).isEqualTo(3);
    assertThat(full.interval()).isEqualTo(Duration.ofSeconds(2));
    assertThat(full.basePort()).isEqualTo(24350);
    assertThat(full.quick()).isFalse();

    Settings.Demo quick = Settings.Demo.from(List.of("--quick"), Map.of());
    assertThat(quick.collectors()).isEqualTo(2);
    assertThat(quick.interval()).isEqualTo(Duration.ofSeconds(1));

    assertThatThrownBy(() -> Settings.Demo.from(List.of("--collectors", "5"), Map.of()))
        .hasMessage("--collectors must be a number of collectors within 2..3, but was '5'");
  }
}
