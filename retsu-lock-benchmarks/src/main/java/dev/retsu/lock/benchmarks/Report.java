package dev.retsu.lock.benchmarks;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.util.Statistics;

/** Collects results and writes {@code results.md} and CSV files. Not thread-safe. */
final class Report {

  private final Profile profile;
  private final Properties versions;
  private final Instant started = Instant.now();
  private final double loadAtStart = loadAverage();
  private final String commit = commit();
  private String server = "?";
  private boolean statements;
  private boolean kernelDrops;
  private boolean interleaved;
  private boolean stoppedOldLeader;
  private final List<FailoverBenchmark.Config> configs = new ArrayList<>();
  private final Map<String, List<FailoverBenchmark.Sample>> failover = new LinkedHashMap<>();
  private final List<IdleCostBenchmark.Result> idle = new ArrayList<>();
  private final List<ScaleBenchmark.Result> scale = new ArrayList<>();
  private final List<RunResult> jmh = new ArrayList<>();
  private final List<ProofCostBenchmark.Result> proof = new ArrayList<>();
  private final List<HandOffBenchmark.Result> handOff = new ArrayList<>();
  private final List<FailoverBenchmark.ClassLoads> classLoads = new ArrayList<>();
  private final List<HorizonBenchmark.Way> ways = new ArrayList<>();
  private final List<HorizonBenchmark.Result> horizon = new ArrayList<>();

  Report(Profile profile, Properties versions) {
    this.profile = profile;
    this.versions = versions;
  }

  void server(String describe, boolean pgStatStatements) {
    this.server = describe;
    this.statements = pgStatStatements;
  }

  void partitionMode(boolean kernel) {
    this.kernelDrops = kernel;
  }

  /** Whether the failover configs ran their repetitions in turn ({@code --interleave on}). */
  void interleaved(boolean on) {
    this.interleaved = on;
  }

  /** Whether a terminate froze the old leader first ({@code --stop-old-leader on}). */
  void stoppedOldLeader(boolean on) {
    this.stoppedOldLeader = on;
  }

  void configs(List<FailoverBenchmark.Config> list) {
    configs.clear();
    configs.addAll(list);
  }

  void failover(FailoverBenchmark.Config config, List<FailoverBenchmark.Sample> samples) {
    failover.put(config.name(), samples);
  }

  void idle(IdleCostBenchmark.Result r) {
    idle.add(r);
  }

  void scale(ScaleBenchmark.Result r) {
    scale.add(r);
  }

  void proof(List<ProofCostBenchmark.Result> results) {
    proof.addAll(results);
  }

  void handOff(List<HandOffBenchmark.Result> results) {
    handOff.addAll(results);
  }

  void classLoads(List<FailoverBenchmark.ClassLoads> all) {
    classLoads.clear();
    classLoads.addAll(all);
  }

  void waysOfWaiting(List<HorizonBenchmark.Way> list) {
    ways.addAll(list);
  }

  void horizon(HorizonBenchmark.Result r) {
    horizon.add(r);
  }

  List<HorizonBenchmark.Result> horizonResults() {
    return List.copyOf(horizon);
  }

  void jmh(List<RunResult> results) {
    jmh.addAll(results);
  }

  List<FailoverBenchmark.Sample> samples() {
    List<FailoverBenchmark.Sample> all = new ArrayList<>();
    failover.values().forEach(all::addAll);
    return all;
  }

  List<IdleCostBenchmark.Result> idleResults() {
    return List.copyOf(idle);
  }

  List<ScaleBenchmark.Result> scaleResults() {
    return List.copyOf(scale);
  }

  List<RunResult> jmhResults() {
    return List.copyOf(jmh);
  }

  void write(Path out) throws IOException {
    Files.writeString(out.resolve("results.md"), markdown());
    StringBuilder csv =
        new StringBuilder(
            "config,scenario,rep,outcome,gap_ms,token_ms,acquire_ms,overlap_ms,claim_ms,note\n");
    for (FailoverBenchmark.Sample s : samples()) {
      csv.append(
          String.format(
              Locale.ROOT,
              "%s,%s,%d,%s,%.3f,%.3f,%.3f,%.3f,%.3f,%s%n",
              s.config(),
              s.scenario(),
              s.rep(),
              s.outcome(),
              s.gapMicros() / 1e3,
              s.tokenMicros() / 1e3,
              s.acquireMicros() / 1e3,
              s.overlapMicros() / 1e3,
              s.claimMicros() / 1e3,
              s.note().replace(',', ';')));
    }
    Files.writeString(out.resolve("failover.csv"), csv);
    if (!failover.isEmpty()) {
      Files.writeString(out.resolve("failover.svg"), chart());
    }
  }

  /** The difference retsu WAIT may add to the raw waiter on the same data source. */
  static final long TARGET_MICROS = 2_000;

  /**
   * Each retsu WAIT config next to the raw waiter on the same kind of data source ({@code
   * retsu-wait<suffix>} with {@code raw-waiter<suffix>}), in the scenarios where the physical
   * session decides: both sides' median and p95, the difference of the medians and their ratio, and
   * whether the difference is within {@link #TARGET_MICROS}. Empty when no such pair ran.
   */
  String physicalLimit() {
    List<FailoverBenchmark.Scenario> physical =
        List.of(
            FailoverBenchmark.Scenario.CLOSE,
            FailoverBenchmark.Scenario.KILL,
            FailoverBenchmark.Scenario.TERMINATE);
    StringBuilder rows = new StringBuilder();
    for (String r : failover.keySet()) {
      if (!r.startsWith("retsu-wait")) {
        continue;
      }
      String raw = "raw-waiter" + r.substring("retsu-wait".length());
      if (!failover.containsKey(raw)) {
        continue;
      }
      for (FailoverBenchmark.Scenario sc : physical) {
        Stats a = stats(failover.get(r).stream().filter(x -> x.scenario() == sc).toList());
        Stats b = stats(failover.get(raw).stream().filter(x -> x.scenario() == sc).toList());
        if (a.n() == 0 && b.n() == 0) {
          continue;
        }
        boolean both = a.n() > 0 && b.n() > 0;
        long diff = a.median() - b.median();
        rows.append(
            String.format(
                Locale.ROOT,
                "| %s | %s vs %s | %s | %d / %d | %s | %s | %s | %s | %s | %s | %s |%n",
                pool(r),
                r,
                raw,
                sc.name().toLowerCase(Locale.ROOT),
                a.n(),
                b.n(),
                Stats.ms(a.median()),
                Stats.ms(a.p95()),
                Stats.ms(b.median()),
                Stats.ms(b.p95()),
                both ? String.format(Locale.ROOT, "%+.1f", diff / 1e3) : "n/a",
                both && b.median() > 0
                    ? String.format(Locale.ROOT, "%.2f", a.median() / (double) b.median())
                    : "n/a",
                !both ? "n/a" : diff <= TARGET_MICROS ? "yes" : "**no**"));
      }
    }
    if (rows.length() == 0) {
      return "";
    }
    return "\n### WAIT next to the raw waiter on the same data source (fault to first refresh, ms)"
        + "\n\nThe raw waiter is a plain session blocked in `pg_advisory_lock` that borrows from"
        + " the same kind of data source: the physical limit. Target: retsu's median at most "
        + TARGET_MICROS / 1000
        + " ms over the raw waiter's in each scenario; n is the moved repetitions of each side.\n\n"
        + "| data source | configs | scenario | n retsu / raw | retsu median | retsu p95"
        + " | raw median | raw p95 | difference of medians | ratio | within "
        + TARGET_MICROS / 1000
        + " ms |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n"
        + rows;
  }

  private String classLoadSection() {
    StringBuilder md = new StringBuilder();
    md.append(
        "\n## The old leader's graceful close: classes its JVM loaded (`-Xlog:class+load`)\n\n"
            + "From SIGTERM to the shutdown hook, and from the hook to the new leader's term start"
            + " (`Term.start()`: its lock granted and token taken, so after the old session ended: an upper"
            + " bound of what loaded before the session ended). Placed on the old JVM's monotonic"
            + " clock through its HOOK line.\n\n"
            + "| config | rep | the old leader had won by | SIGTERM to hook (ms) | SIGTERM to new"
            + " term (ms) | loaded before the hook | loaded from the hook to the new term |\n"
            + "| --- | --- | --- | --- | --- | --- | --- |\n");
    Map<String, List<Long>> seen = new java.util.TreeMap<>();
    for (FailoverBenchmark.ClassLoads c : classLoads) {
      md.append(
          String.format(
              Locale.ROOT,
              "| %s | %d | %s | %s | %s | %d | %d |%n",
              c.config(),
              c.rep(),
              c.became(),
              Stats.ms(c.hookMicros()),
              Stats.ms(c.newTermMicros()),
              c.beforeHook().size(),
              c.hookToNewTerm().size()));
      for (String phase : List.of("before the hook", "hook to new term")) {
        for (String stamped : phase.startsWith("before") ? c.beforeHook() : c.hookToNewTerm()) {
          int at = stamped.lastIndexOf('@');
          // hidden classes (lambdas) carry an address: one name for all repetitions
          String name =
              stamped
                  .substring(0, at)
                  .replaceAll("/0x[0-9a-f]+$", "")
                  .replaceAll("\\$\\$Lambda\\$?[0-9]*", "\\$\\$Lambda");
          seen.computeIfAbsent(
                  c.config() + " | " + phase + " | `" + name + "`", k -> new ArrayList<>())
              .add(Long.parseLong(stamped.substring(at + 1)));
        }
      }
    }
    if (!seen.isEmpty()) {
      md.append(
          "\nEach class, in how many repetitions it loaded, and when (median ms after"
              + " SIGTERM):\n\n| config | phase | class | repetitions | median ms after SIGTERM |\n"
              + "| --- | --- | --- | --- | --- |\n");
      seen.forEach(
          (k, v) ->
              md.append("| ")
                  .append(k)
                  .append(" | ")
                  .append(v.size())
                  .append(" | ")
                  .append(Stats.ms(Stats.of(v).median()))
                  .append(" |\n"));
    }
    return md.toString();
  }

  private String horizonSection() {
    StringBuilder md = new StringBuilder("\n## The horizon: what a waiting standby holds back\n");
    if (!ways.isEmpty()) {
      md.append(
          "\n### Ways of waiting on a lock, and the snapshot the waiting session holds\n\n"
              + "A plain session holds the lock; another waits the way named; ten transactions"
              + " run elsewhere; then the waiter's `backend_xmin` is read from `pg_stat_activity`."
              + " \"none\" (null) holds back nothing.\n\n"
              + "| way of waiting | pgjdbc protocol | seen waiting | `age(backend_xmin)` while"
              + " waiting | wait event |\n| --- | --- | --- | --- | --- |\n");
      for (HorizonBenchmark.Way w : ways) {
        md.append(
            String.format(
                Locale.ROOT,
                "| %s | %s | %s | %s | %s |%n",
                w.way(),
                w.protocol(),
                w.waited() ? "yes" : "no",
                w.xminAge() < 0 ? "none" : w.xminAge() + " xids",
                w.waitEvent()));
      }
    }
    if (!horizon.isEmpty()) {
      md.append(
          "\n### waitTimeout against the horizon and the server log\n\n"
              + "Standbys wait on a key a plain session holds while one loader thread updates a"
              + " 1,000-row table in autocommit (one xid and one dead tuple per update). Every second"
              + " the oldest `age(backend_xmin)` among the standbys' sessions is sampled, in xids"
              + " and in seconds since its statement began; `VACUUM (VERBOSE)` runs on the table"
              + " every sixth of the window (at least 5 s apart) and at its end. Re-arms are the"
              + " standbys' attempts that ended in `lock_timeout`; the log counts are the lines the"
              + " embedded server wrote in the window (only the standbys made errors there).\n\n"
              + "| setup | waitTimeout | standbys | observed (s) | samples with a snapshot"
              + " | max horizon age (s) | max horizon age (xids) | updates/s"
              + " | dead tuples not yet removable, max (last) | re-arms (POLL: attempts) | per hour per standby"
              + " | lock_timeout ERROR lines | log lines/hour/standby |\n"
              + "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
      for (HorizonBenchmark.Result r : horizon) {
        md.append(
            String.format(
                Locale.ROOT,
                "| %s | %s | %d | %.0f | %d of %d | %.1f | %s | %.0f | %d (%d) | %d | %.0f | %s |"
                    + " %s |%n",
                r.setup().name(),
                r.setup().waitTimeout() == null ? "-" : r.setup().waitTimeout().toSeconds() + " s",
                r.setup().standbys(),
                r.seconds(),
                r.samplesWithSnapshot(),
                r.samples(),
                r.maxAgeSeconds(),
                r.maxAgeXids() < 0 ? "none" : Long.toString(r.maxAgeXids()),
                r.updatesPerSecond(),
                r.maxDeadNotRemovable(),
                r.lastDeadNotRemovable(),
                r.rearms(),
                r.perHourPerStandby(r.rearms()),
                r.lockTimeoutErrors() < 0 ? "n/a" : Long.toString(r.lockTimeoutErrors()),
                r.logLines() < 0
                    ? "n/a"
                    : String.format(Locale.ROOT, "%.0f", r.perHourPerStandby(r.logLines()))));
      }
    }
    return md.toString();
  }

  /** The data source a config's name says: the pool suffix, else pgjdbc's plain data source. */
  static String pool(String config) {
    if (config.endsWith("-hikari")) {
      return "HikariCP";
    }
    if (config.endsWith("-dbcp2")) {
      return "DBCP2";
    }
    return "PGSimpleDataSource";
  }

  /** The failover chart: one panel per scenario, one row of samples per config. */
  String chart() {
    List<SvgChart.Panel> panels = new ArrayList<>();
    for (FailoverBenchmark.Scenario sc : FailoverBenchmark.Scenario.values()) {
      List<SvgChart.Series> series = new ArrayList<>();
      for (Map.Entry<String, List<FailoverBenchmark.Sample>> e : failover.entrySet()) {
        List<FailoverBenchmark.Sample> s =
            e.getValue().stream().filter(x -> x.scenario() == sc).toList();
        if (s.isEmpty()) {
          continue;
        }
        series.add(
            new SvgChart.Series(
                e.getKey(),
                s.stream()
                    .filter(x -> x.outcome() == FailoverBenchmark.Outcome.MOVED)
                    .map(x -> x.gapMicros() / 1e3)
                    .toList()));
      }
      if (!series.isEmpty()) {
        panels.add(new SvgChart.Panel(sc.title, series));
      }
    }
    return SvgChart.render(
        "Takeover after a fault, every repetition (commit " + commit + ")",
        "fault to the new leader's first task, ms (log scale); box: quartiles, bar: median",
        panels,
        true);
  }

  private String markdown() {
    StringBuilder md = new StringBuilder();
    Runtime rt = Runtime.getRuntime();
    md.append("# retsu-lock benchmark results (").append(profile.name()).append(" run)\n\n");
    md.append("- started ")
        .append(started.truncatedTo(ChronoUnit.SECONDS))
        .append(", written ")
        .append(Instant.now().truncatedTo(ChronoUnit.SECONDS))
        .append('\n');
    md.append("- machine: ")
        .append(System.getProperty("os.name"))
        .append(' ')
        .append(System.getProperty("os.version"))
        .append(' ')
        .append(System.getProperty("os.arch"))
        .append(", ")
        .append(rt.availableProcessors())
        .append(" cores, ")
        .append(totalMemoryGiB())
        .append(" GiB\n");
    md.append("- commit: ")
        .append(commit)
        .append("; machine load (1-minute load average): ")
        .append(String.format(Locale.ROOT, "%.2f", loadAtStart))
        .append(" at start, ")
        .append(String.format(Locale.ROOT, "%.2f", loadAverage()))
        .append(" when written\n");
    md.append("- Java ")
        .append(System.getProperty("java.version"))
        .append(" (")
        .append(System.getProperty("java.vm.name"))
        .append(")\n");
    md.append("- server: ")
        .append(server)
        .append(", pg_stat_statements ")
        .append(statements ? "on" : "off")
        .append('\n');
    md.append("- libraries: ");
    versions.stringPropertyNames().stream()
        .sorted()
        .forEach(k -> md.append(k).append(' ').append(versions.getProperty(k)).append("; "));
    md.append('\n');
    md.append("- partition: ")
        .append(
            kernelDrops
                ? "fault proxy blackhole plus kernel packet drops (nftables, root): keepalive probes are"
                    + " lost too"
                : "fault proxy blackhole only (no root or no nft): the proxy's kernel still answers the"
                    + " server's keepalive probes, so only idle_session_timeout or a TTL ends the"
                    + " session")
        .append('\n');
    md.append("- order: ")
        .append(
            interleaved
                ? "interleaved: repetition 1 of every config, then repetition 2, each starting with"
                    + " the next config in turn"
                : "one config after another")
        .append('\n');
    if (stoppedOldLeader) {
      md.append(
          "- terminate: the old leader's JVM was frozen (SIGSTOP) before the fault's stamp, so its"
              + " reaction to the FATAL did not share the cores with the takeover (--stop-old-leader"
              + " on; a diagnostic, not the default scenario). A frozen leader cannot act, so its"
              + " terminate rows' acting overlap proves nothing\n");
    }
    md.append(
        "- time base: every child prints its wall clock (epoch µs, Clock.systemUTC) with each"
            + " event; the parent reads the same clock right before injecting the fault\n\n");

    md.append("## Configs\n\n| config | library | settings |\n| --- | --- | --- |\n");
    for (FailoverBenchmark.Config c : configs) {
      md.append("| ")
          .append(c.name())
          .append(" | ")
          .append(c.library())
          .append(" | ")
          .append(c.settings())
          .append(" |\n");
    }
    if (!failover.isEmpty()) {
      md.append("\n## Failover: fault to the first refresh of the new leader (ms)\n");
      for (FailoverBenchmark.Scenario sc : FailoverBenchmark.Scenario.values()) {
        md.append("\n### ").append(sc.title).append("\n\n");
        md.append(
            "| config | n | moved / kept / timeout | min | median | p95 | max | median to token"
                + " | median to term start | acting overlap |\n");
        md.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
        for (Map.Entry<String, List<FailoverBenchmark.Sample>> e : failover.entrySet()) {
          List<FailoverBenchmark.Sample> s =
              e.getValue().stream().filter(x -> x.scenario() == sc).toList();
          if (s.isEmpty()) {
            continue;
          }
          Stats st = stats(s);
          long moved =
              s.stream().filter(x -> x.outcome() == FailoverBenchmark.Outcome.MOVED).count();
          long kept = s.stream().filter(x -> x.outcome() == FailoverBenchmark.Outcome.KEPT).count();
          long overlaps = s.stream().filter(x -> x.overlapMicros() > 0).count();
          long worst =
              s.stream().mapToLong(FailoverBenchmark.Sample::overlapMicros).max().orElse(0);
          Stats acquired =
              Stats.of(
                  s.stream()
                      .filter(x -> x.outcome() == FailoverBenchmark.Outcome.MOVED)
                      .map(FailoverBenchmark.Sample::acquireMicros)
                      .toList());
          Stats tokened =
              Stats.of(
                  s.stream()
                      .filter(x -> x.outcome() == FailoverBenchmark.Outcome.MOVED)
                      .map(FailoverBenchmark.Sample::tokenMicros)
                      .filter(g -> g >= 0)
                      .toList());
          md.append(
              String.format(
                  Locale.ROOT,
                  "| %s | %d | %d / %d / %d | %s | %s | %s | %s | %s | %s | %s |%n",
                  e.getKey(),
                  s.size(),
                  moved,
                  kept,
                  s.size() - moved - kept,
                  Stats.ms(st.min()),
                  Stats.ms(st.median()),
                  Stats.ms(st.p95()),
                  Stats.ms(st.max()),
                  tokened.n() == 0 ? "n/a" : Stats.ms(tokened.median()),
                  Stats.ms(acquired.median()),
                  overlaps == 0 ? "none" : overlaps + "x, up to " + Stats.ms(worst) + " ms"));
        }
      }
      md.append(physicalLimit());
      md.append("\n### Ratios retsu / peer (median gap; < 1 means retsu is faster)\n\n");
      md.append("| retsu config | peer config |");
      for (FailoverBenchmark.Scenario sc : FailoverBenchmark.Scenario.values()) {
        md.append(' ').append(sc.name().toLowerCase(Locale.ROOT)).append(" |");
      }
      md.append("\n| --- | --- |");
      for (int i = 0; i < FailoverBenchmark.Scenario.values().length; i++) {
        md.append(" --- |");
      }
      md.append('\n');
      for (String r : failover.keySet()) {
        if (!r.startsWith("retsu")) {
          continue;
        }
        for (String p : failover.keySet()) {
          if (p.startsWith("retsu") || !group(r).equals(group(p))) {
            continue;
          }
          md.append("| ").append(r).append(" | ").append(p).append(" |");
          for (FailoverBenchmark.Scenario sc : FailoverBenchmark.Scenario.values()) {
            Stats a = stats(failover.get(r).stream().filter(x -> x.scenario() == sc).toList());
            Stats b = stats(failover.get(p).stream().filter(x -> x.scenario() == sc).toList());
            md.append(' ')
                .append(
                    a.n() == 0 || b.n() == 0 || b.median() <= 0
                        ? "n/a"
                        : String.format(Locale.ROOT, "%.3f", a.median() / (double) b.median()))
                .append(" |");
          }
          md.append('\n');
        }
      }
    }
    if (!classLoads.isEmpty()) {
      md.append(classLoadSection());
    }
    if (!ways.isEmpty() || !horizon.isEmpty()) {
      md.append(horizonSection());
    }
    if (!idle.isEmpty()) {
      md.append("\n## Idle cost over ")
          .append(profile.idleWindow().toSeconds())
          .append(" s (1 leader + 2 standbys, statements from pg_stat_statements by role)\n\n");
      md.append(
          "| config | statements/s leader | statements/s per standby | connections leader"
              + " | connections per standby | leader JVM CPU (% of a core) | CPU per standby JVM"
              + " | note |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n");
      for (IdleCostBenchmark.Result r : idle) {
        md.append(
            String.format(
                Locale.ROOT,
                "| %s | %.2f | %.2f | %.1f | %.1f | %s | %s | %s |%n",
                r.config(),
                r.leaderStatementsPerSecond(),
                r.standbyStatementsPerSecond(),
                r.leaderConnections(),
                r.standbyConnections(),
                percent(r.leaderCpuPercent()),
                percent(r.standbyCpuPercent()),
                r.note()));
      }
    }
    if (!scale.isEmpty()) {
      md.append("\n## Scale at rest (window ")
          .append(profile.scaleWindow().toSeconds())
          .append(" s)\n\n");
      md.append(
          "| scenario | candidates | keys | statements/s | server CPU (% of one core) |"
              + " connections | settle (ms) | note |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n");
      for (ScaleBenchmark.Result r : scale) {
        md.append(
            String.format(
                Locale.ROOT,
                "| %s | %d | %d | %s | %s | %s | %s | %s |%n",
                r.scenario(),
                r.candidates(),
                r.keys(),
                r.statementsPerSecond() < 0
                    ? "n/a"
                    : String.format(Locale.ROOT, "%.0f", r.statementsPerSecond()),
                r.serverCpuPercent() < 0
                    ? "n/a"
                    : String.format(Locale.ROOT, "%.1f", r.serverCpuPercent()),
                r.connections() < 0 ? "n/a" : Integer.toString(r.connections()),
                r.settleMillis() < 0 ? "n/a" : Long.toString(r.settleMillis()),
                r.note()));
      }
    }
    if (!proof.isEmpty()) {
      md.append("\n## Ownership proof and attempt cost vs locks on the server\n\n");
      md.append(
          "One call at a time on loopback; a filler session holds the locks.\n\n"
              + "| locks on the server | operation | n | p50 (µs) | p99 (µs) |\n"
              + "| --- | --- | --- | --- | --- |\n");
      for (ProofCostBenchmark.Result r : proof) {
        md.append(
            String.format(
                Locale.ROOT,
                "| %d | %s | %d | %.0f | %.0f |%n",
                r.locksOnServer(),
                r.operation(),
                r.n(),
                r.p50Nanos() / 1e3,
                r.p99Nanos() / 1e3));
      }
    }
    if (!handOff.isEmpty()) {
      md.append("\n## Another thread on the leader's session, and ensureLeader()\n\n");
      md.append(
          "A loop with the defaults, idle between refreshes; the baseline is the same statement"
              + " on a plain connection in the same run.\n\n"
              + "| operation | n | p50 (µs) | p99 (µs) | max (µs) |\n"
              + "| --- | --- | --- | --- | --- |\n");
      for (HandOffBenchmark.Result r : handOff) {
        md.append(
            String.format(
                Locale.ROOT,
                "| %s | %d | %.0f | %.0f | %.0f |%n",
                r.operation(),
                r.n(),
                r.p50Nanos() / 1e3,
                r.p99Nanos() / 1e3,
                r.maxNanos() / 1e3));
      }
    }
    if (!jmh.isEmpty()) {
      md.append("\n## JMH (sample time, µs per call, loopback, 1 thread)\n\n");
      md.append(
          "| benchmark | samples | mean | p50 | p90 | p99 | max |\n"
              + "| --- | --- | --- | --- | --- | --- | --- |\n");
      for (RunResult r : jmh) {
        Statistics s = r.getPrimaryResult().getStatistics();
        String name = r.getParams().getBenchmark();
        md.append(
            String.format(
                Locale.ROOT,
                "| %s | %d | %.1f | %.1f | %.1f | %.1f | %.1f |%n",
                name.substring(name.lastIndexOf('.') + 1),
                s.getN(),
                s.getMean(),
                s.getPercentile(50),
                s.getPercentile(90),
                s.getPercentile(99),
                s.getMax()));
      }
    }
    return md.toString();
  }

  private static Stats stats(List<FailoverBenchmark.Sample> s) {
    return Stats.of(
        s.stream()
            .filter(x -> x.outcome() == FailoverBenchmark.Outcome.MOVED)
            .map(FailoverBenchmark.Sample::gapMicros)
            .toList());
  }

  private static String group(String config) {
    int dash = config.lastIndexOf('-');
    String suffix = dash < 0 ? "" : config.substring(dash + 1);
    if (suffix.equals("hikari") || suffix.equals("dbcp2")) {
      return group(config.substring(0, dash));
    }
    if (suffix.equals("fast")) {
      return "1s"; // compared with the peers tuned to 1 s
    }
    return suffix.equals("1s") || suffix.equals("default") ? suffix : "smoke";
  }

  private static double loadAverage() {
    return ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
  }

  /**
   * The commit: the system property {@code retsu.bench.commit} when set (so a jar copied out of the
   * checkout can name it), else the checked-out commit (with "+changes" when the tree differs), or
   * "unknown".
   */
  private static String commit() {
    String given = System.getProperty("retsu.bench.commit");
    if (given != null && !given.isBlank()) {
      return given;
    }
    try {
      Process head =
          new ProcessBuilder("git", "rev-parse", "--short=12", "HEAD")
              .redirectErrorStream(true)
              .start();
      String id = new String(head.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
      if (head.waitFor() != 0) {
        return "unknown";
      }
      Process status =
          new ProcessBuilder("git", "status", "--porcelain", "--untracked-files=no")
              .redirectErrorStream(true)
              .start();
      boolean dirty = status.getInputStream().readAllBytes().length > 0;
      status.waitFor();
      return id + (dirty ? "+changes" : "");
    } catch (IOException e) {
      return "unknown";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "unknown";
    }
  }

  private static long totalMemoryGiB() {
    if (ManagementFactory.getOperatingSystemMXBean()
        instanceof com.sun.management.OperatingSystemMXBean os) {
      return Math.round(os.getTotalMemorySize() / (double) (1L << 30));
    }
    return -1;
  }

  /** A percentage with one decimal, or n/a when it was not measured (negative). */
  private static String percent(double p) {
    return p < 0 ? "n/a" : String.format(Locale.ROOT, "%.1f", p);
  }
}
