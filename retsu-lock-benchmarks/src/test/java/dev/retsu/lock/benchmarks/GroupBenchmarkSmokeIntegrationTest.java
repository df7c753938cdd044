package dev.retsu.lock.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The CI-sized run of the group benchmark (200 keys over 2 member JVMs), so the harness cannot rot.
 * Asserts structure and safety only: every scenario, the server restart included, produced a
 * measurement, the at-rest row has the server's memory, every key's timeline went through
 * TermChecker with no violation, every key came back after the restart with a newer token, and the
 * file names the commit and the load. Never asserts timings.
 */
class GroupBenchmarkSmokeIntegrationTest {

  @Test
  void groupRunMeasuresEveryScenarioAndWritesTheResults(@TempDir Path out) throws Exception {
    BenchmarkMain.run(
        "group",
        "--out",
        out.toString(),
        "--group-keys",
        "200",
        "--group-members",
        "2",
        "--group-shapes",
        "2x100",
        "--group-reps",
        "1",
        "--group-settle",
        "1");

    String md = Files.readString(out.resolve("group-results.md"));
    assertThat(md).contains("- commit ").contains("load average before ");
    List<String[]> rows =
        md.lines().filter(l -> l.startsWith("| 200 | 2 |")).map(l -> l.split("\\|")).toList();
    // | keys | members | scenario | owned | balanced | sessions | statements/s | CPU | memory
    // | processes | terms | violations | note |
    // Only an embedded server is restarted; one given by RETSU_BENCH_JDBC_URL is not ours to stop.
    String external = System.getenv("RETSU_BENCH_JDBC_URL");
    boolean restarts = external == null || external.isBlank();
    assertThat(rows).hasSize(restarts ? 4 : 3);
    assertThat(rows)
        .allSatisfy(
            row -> {
              String text = String.join("|", row);
              assertThat(row[5].strip()).as(text).isNotEqualTo("-"); // balanced reached
              assertThat(row[12].strip()).as(text).isEqualTo("0"); // no two acting owners
            });
    String[] rest = rows.get(0);
    assertThat(rest[3]).contains("cold start");
    if (restarts) { // an embedded server is a local process: its memory is read from /proc
      assertThat(rest[9].strip()).matches("[0-9.]+ \\([0-9.]+\\)"); // MiB at rest (idle)
    }
    assertThat(Integer.parseInt(rest[11].strip())).isGreaterThanOrEqualTo(200);
    // | members | keys per member | departure | n | keys | median | min / max | parent | terms
    // | violations |
    List<String[]> departures =
        md.lines().filter(l -> l.startsWith("| 2 | 100 |")).map(l -> l.split("\\|")).toList();
    assertThat(departures).hasSize(2);
    assertThat(departures.get(0)[3]).contains("graceful leave");
    assertThat(departures.get(1)[3]).contains("kill -9");
    assertThat(departures)
        .allSatisfy(
            row -> {
              String text = String.join("|", row);
              assertThat(row[4].strip()).as(text).isEqualTo("1");
              assertThat(Integer.parseInt(row[5].strip())).as(text).isPositive();
              assertThat(row[6].strip()).as(text).matches("[0-9.]+"); // all owned again
              assertThat(row[10].strip()).as(text).isEqualTo("0"); // no two acting owners
            });
    assertThat(Files.readString(out.resolve("group.svg")))
        .contains("data-config=\"2 members x 100 keys\"");
    assertThat(rows.get(1)[3]).contains("kill -9 of one member");
    assertThat(rows.get(2)[3]).contains("joins");
    if (!restarts) {
      return;
    }
    String[] restart = rows.get(3);
    assertThat(restart[3]).contains("restart of the server");
    assertThat(restart[4].strip()).isNotEqualTo("-");
    assertThat(Integer.parseInt(restart[11].strip())).isGreaterThanOrEqualTo(200);
    assertThat(restart[13]).contains("200 of 200 keys taken again, 200 of them with a newer");
  }
}
