package dev.retsu.lock.ha;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * Writes the figures of one HA test class to {@code <dir>/<name>.tsv} (every round, every column)
 * and {@code <dir>/<name>.md} (per scenario: min / median / max of each time, the distinct texts),
 * each headed by the commit, the machine's load average at the start and the end, the versions and
 * the cluster's settings. Rewritten after every round, so a failed run still leaves its figures.
 */
public final class HaResults {

  private final Path dir;
  private final String name;
  private final List<String> header = new ArrayList<>();
  private final List<Round> rounds = new ArrayList<>();
  private final Map<String, List<String>> notes = new LinkedHashMap<>();
  private final String loadAtStart;

  /**
   * A writer.
   *
   * @param dir the directory
   * @param name the files' base name
   * @param settings the cluster's settings
   */
  public HaResults(Path dir, String name, HaSettings settings) {
    this.dir = dir;
    this.name = name;
    this.loadAtStart = loadAverage();
    header.add("run: " + Instant.now() + ", commit " + commit());
    header.add("machine: " + Runtime.getRuntime().availableProcessors() + " cores, " + jvm());
    header.add("cluster: " + settings + "; one etcd member");
    header.add("versions: " + versions());
  }

  /**
   * Adds a round and rewrites the files.
   *
   * @param round the round
   */
  public void add(Round round) {
    rounds.add(round);
    write();
  }

  /**
   * Adds a line of text under a scenario (a finding, a violation, what the fence did).
   *
   * @param scenario the scenario
   * @param line the text
   */
  public void note(String scenario, String line) {
    notes.computeIfAbsent(scenario, k -> new ArrayList<>()).add(line);
    write();
  }

  /**
   * The rounds so far.
   *
   * @return a copy
   */
  public List<Round> rounds() {
    return List.copyOf(rounds);
  }

  private void write() {
    try {
      Files.createDirectories(dir);
      List<String> head = new ArrayList<>(header);
      head.add("load average: " + loadAtStart + " at the start, " + loadAverage() + " now");
      StringBuilder tsv = new StringBuilder();
      for (String h : head) {
        tsv.append("# ").append(h).append('\n');
      }
      tsv.append("scenario\trep\t").append(String.join("\t", Round.COLUMNS)).append('\n');
      for (Round r : rounds) {
        tsv.append(r.scenario()).append('\t').append(r.rep());
        for (String c : Round.COLUMNS) {
          tsv.append('\t').append(r.figures().get(c));
        }
        tsv.append('\n');
      }
      Files.writeString(dir.resolve(name + ".tsv"), tsv);
      Files.writeString(dir.resolve(name + ".md"), summary(head));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write the HA results to " + dir, e);
    }
  }

  private String summary(List<String> head) {
    StringBuilder md = new StringBuilder("# " + name + "\n\n");
    for (String h : head) {
      md.append("- ").append(h).append('\n');
    }
    Map<String, List<Round>> byScenario = new LinkedHashMap<>();
    for (Round r : rounds) {
      byScenario.computeIfAbsent(r.scenario(), k -> new ArrayList<>()).add(r);
    }
    for (Map.Entry<String, List<Round>> e : byScenario.entrySet()) {
      md.append("\n## ").append(e.getKey()).append(" (").append(e.getValue().size());
      md.append(" rounds)\n\n| figure | min / median / max, or values |\n| --- | --- |\n");
      for (String c : Round.COLUMNS) {
        md.append("| ").append(c).append(" | ").append(column(e.getValue(), c)).append(" |\n");
      }
      for (String n : notes.getOrDefault(e.getKey(), List.of())) {
        md.append("\n- ").append(n);
      }
      md.append('\n');
    }
    return md.toString();
  }

  /** Numbers: min / median / max (n); texts: each distinct value with its count. */
  static String column(List<Round> rounds, String column) {
    List<Double> numbers = new ArrayList<>();
    Map<String, Integer> texts = new TreeMap<>();
    for (Round r : rounds) {
      String v = r.figures().get(column);
      if (v == null || v.isEmpty()) {
        continue;
      }
      try {
        numbers.add(Double.parseDouble(v));
      } catch (NumberFormatException notANumber) {
        texts.merge(v, 1, Integer::sum);
      }
    }
    if (!numbers.isEmpty() && texts.isEmpty() && !column.endsWith("token")) {
      numbers.sort(Double::compare);
      return String.format(
          Locale.ROOT,
          "%.0f / %.0f / %.0f (%d)",
          numbers.get(0),
          median(numbers),
          numbers.get(numbers.size() - 1),
          numbers.size());
    }
    for (Round r : rounds) {
      String v = r.figures().get(column);
      if (v != null && !v.isEmpty() && numbers.contains(parse(v))) {
        texts.merge(v, 1, Integer::sum);
      }
    }
    StringBuilder b = new StringBuilder();
    texts.forEach((k, n) -> b.append(b.length() == 0 ? "" : ", ").append(k).append(" ×").append(n));
    return b.length() == 0 ? "-" : b.toString();
  }

  private static Double parse(String v) {
    try {
      return Double.parseDouble(v);
    } catch (NumberFormatException e) {
      return Double.NaN;
    }
  }

  /**
   * The median of sorted numbers.
   *
   * @param sorted ascending, not empty
   * @return the median
   */
  static double median(List<Double> sorted) {
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }

  private static String loadAverage() {
    try {
      String[] p = Files.readString(Path.of("/proc/loadavg")).split(" ");
      return p[0] + " " + p[1] + " " + p[2];
    } catch (IOException e) {
      return "unknown";
    }
  }

  private static String commit() {
    HaEnvironment.Result head =
        HaEnvironment.run(List.of("git", "rev-parse", "--short=12", "HEAD"), 10);
    HaEnvironment.Result dirty = HaEnvironment.run(List.of("git", "status", "--porcelain"), 10);
    String c = head.status() == 0 ? head.output().trim() : "unknown";
    return dirty.status() == 0 && !dirty.output().isBlank() ? c + " (with local changes)" : c;
  }

  private static String jvm() {
    return System.getProperty("java.vm.name") + " " + System.getProperty("java.version");
  }

  private static String versions() {
    List<String> out = new ArrayList<>();
    out.add(first(List.of("/usr/bin/patroni", "--version")));
    out.add(first(List.of("/usr/bin/etcd", "--version")));
    out.add(first(List.of("/usr/sbin/haproxy", "-v")));
    out.add(first(List.of(HaEnvironment.PG_BIN.resolve("postgres").toString(), "--version")));
    return String.join("; ", out);
  }

  private static String first(List<String> command) {
    HaEnvironment.Result r = HaEnvironment.run(command, 20);
    String[] lines = r.output().trim().split("\n");
    return lines.length == 0 ? "?" : lines[0].trim();
  }
}
