package dev.retsu.lock.benchmarks;

import dev.retsu.lock.LeaderGroup;
import dev.retsu.lock.LeaderLoopBuilder;
import dev.retsu.lock.testing.FaultProxy;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.runner.options.VerboseMode;

/**
 * The benchmark command line.
 *
 * <pre>
 * java -jar retsu-lock-benchmarks.jar [all|failover|idle|scale|proof|handoff|horizon|jmh|smoke]
 *     [--out DIR] [--reps N] [--default-reps N] [--only NAME,NAME]
 *     [--scenarios close,kill,terminate,partition,pause] [--scale-keys N,N]
 *     [--trace-class-load on] [--interleave on] [--stop-old-leader on] [--horizon-timeouts S,S] [--horizon-standbys N,N] [--horizon-cap S]
 * java -jar retsu-lock-benchmarks.jar chart --csv failover.csv[,failover.csv] --svg FILE [--title T]
 * java -jar retsu-lock-benchmarks.jar group [--out DIR] [--group-keys N] [--group-members N,N|none]
 *     [--group-sessions N] [--group-shapes MxK,MxK|none] [--group-reps N] [--group-settle S]
 * </pre>
 *
 * <p>{@code group} runs only {@link GroupBenchmark} (10,000 keys over 2 and over 10 member JVMs by
 * default, then departures at 2 x 1,000, 2 x 5,000 and 10 x 1,000 keys, 5 repetitions) and writes
 * {@code DIR/group-results.md} and {@code DIR/group.svg}; it is not part of {@code all}.
 *
 * <p>{@code all} is the full run of docs/BENCHMARKS.md; {@code smoke} is the CI-sized run of every
 * part. Results go to {@code DIR/results.md} and CSV files beside it; progress goes to stderr.
 * Against {@code RETSU_BENCH_JDBC_URL} when set, else an embedded PostgreSQL that is stopped at the
 * end.
 */
public final class BenchmarkMain {

  /** The parts of a run. */
  enum Part {
    FAILOVER,
    IDLE,
    SCALE,
    PROOF,
    HANDOFF,
    HORIZON,
    JMH
  }

  private BenchmarkMain() {}

  /**
   * Runs the benchmarks.
   *
   * @param args command and options
   * @throws Exception when a part fails
   */
  public static void main(String[] args) throws Exception {
    // thousands of in-process loops log every start and stop at INFO: keep the console readable
    if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
      System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    }
    Path out = run(args);
    if (args.length == 0 || !args[0].equals("chart")) {
      System.out.println(Files.readString(out.resolve("results.md")));
    }
  }

  /**
   * Runs the benchmarks and returns the directory with the results.
   *
   * @param args command and options
   * @return the results directory
   * @throws Exception when a part fails
   */
  public static Path run(String... args) throws Exception {
    String command = args.length > 0 && !args[0].startsWith("--") ? args[0] : "all";
    if (command.equals("group")) {
      return group(args);
    }
    if (command.equals("chart")) {
      return chart(args);
    }
    Profile profile = command.equals("smoke") ? Profile.smokeRun() : Profile.fullRun();
    Set<Part> parts =
        switch (command) {
          case "all", "smoke" -> EnumSet.allOf(Part.class);
          case "failover" -> EnumSet.of(Part.FAILOVER);
          case "idle" -> EnumSet.of(Part.IDLE);
          case "scale" -> EnumSet.of(Part.SCALE);
          case "proof" -> EnumSet.of(Part.PROOF);
          case "handoff" -> EnumSet.of(Part.HANDOFF);
          case "horizon" -> EnumSet.of(Part.HORIZON);
          case "jmh" -> EnumSet.of(Part.JMH);
          default ->
              throw new IllegalArgumentException(
                  "command must be all, failover, idle, scale, proof, handoff, horizon, jmh or smoke, but"
                      + " was "
                      + command);
        };
    Path out = defaultOut();
    List<String> only = List.of();
    boolean traceClassLoad = false;
    boolean interleave = false;
    boolean stopOldLeader = false;
    List<Duration> horizonTimeouts = profile.horizonTimeouts();
    int[] horizonStandbys = profile.smoke() ? new int[] {1} : new int[] {1, 3};
    Duration horizonCap = profile.horizonCap();
    List<FailoverBenchmark.Scenario> scenarios =
        new ArrayList<>(List.of(FailoverBenchmark.Scenario.values()));
    for (int i = args.length > 0 && !args[0].startsWith("--") ? 1 : 0; i < args.length; i += 2) {
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException(args[i] + " needs a value");
      }
      String v = args[i + 1];
      switch (args[i]) {
        case "--out" -> out = Path.of(v);
        case "--reps" -> profile = withReps(profile, Integer.parseInt(v), profile.defaultReps());
        case "--default-reps" -> profile = withReps(profile, profile.reps(), Integer.parseInt(v));
        case "--only" -> only = Arrays.asList(v.split(","));
        case "--scenarios" -> {
          scenarios.clear();
          for (String name : v.split(",")) {
            scenarios.add(FailoverBenchmark.Scenario.valueOf(name.toUpperCase(Locale.ROOT)));
          }
        }
        case "--scale-keys" -> profile = withKeys(profile, v);
        case "--one-key-candidates" -> profile = withOneKey(profile, Integer.parseInt(v));
        case "--trace-class-load" -> traceClassLoad = onOff(args[i], v);
        case "--interleave" -> interleave = onOff(args[i], v);
        case "--stop-old-leader" -> stopOldLeader = onOff(args[i], v);
        case "--horizon-timeouts" ->
            horizonTimeouts =
                Arrays.stream(v.split(","))
                    .map(t -> Duration.ofSeconds(Long.parseLong(t)))
                    .toList();
        case "--horizon-standbys" ->
            horizonStandbys = Arrays.stream(v.split(",")).mapToInt(Integer::parseInt).toArray();
        case "--horizon-cap" -> horizonCap = Duration.ofSeconds(Long.parseLong(v));
        default -> throw new IllegalArgumentException("unknown option " + args[i]);
      }
    }
    Files.createDirectories(out);
    Properties versions = versions();
    Report report = new Report(profile, versions);
    int maxKeys = Arrays.stream(profile.keySteps()).max().orElse(0);
    int maxConnections =
        parts.contains(Part.SCALE)
            ? Math.max(400, maxKeys + profile.oneKeyCandidates() + 200)
            : 400;
    Progress.log("%s run (%s), results in %s", profile.name(), parts, out.toAbsolutePath());
    try (BenchEnv env = BenchEnv.start(out, maxConnections)) {
      report.server(env.describe(), env.statementsExtension);
      try (FaultProxy probe = FaultProxy.inFrontOf(env.jdbcUrl())) {
        report.partitionMode(probe.kernelDrops());
      }
      List<FailoverBenchmark.Config> configs = new ArrayList<>();
      for (FailoverBenchmark.Config c :
          profile.configs(
              versions.getProperty("retsu-lock"),
              versions.getProperty("shedlock"),
              versions.getProperty("spring-integration"))) {
        if (only.isEmpty() || only.contains(c.name())) {
          configs.add(c);
        }
      }
      report.configs(configs);
      if (parts.contains(Part.FAILOVER)) {
        FailoverBenchmark failover =
            new FailoverBenchmark(env, List.copyOf(scenarios), traceClassLoad);
        report.interleaved(interleave);
        failover.stopOldLeader(stopOldLeader);
        report.stoppedOldLeader(stopOldLeader);
        if (interleave) {
          Map<String, List<FailoverBenchmark.Sample>> samples = failover.runInterleaved(configs);
          for (FailoverBenchmark.Config c : configs) {
            report.failover(c, samples.get(c.name()));
          }
          report.classLoads(failover.classLoads());
          report.write(out);
        } else {
          for (FailoverBenchmark.Config c : configs) {
            report.failover(c, failover.run(c));
            report.classLoads(failover.classLoads());
            report.write(out);
          }
        }
      }
      if (parts.contains(Part.IDLE)) {
        IdleCostBenchmark idle = new IdleCostBenchmark(env, profile.idleWindow());
        for (FailoverBenchmark.Config c : configs) {
          if (!c.idle()) {
            continue;
          }
          Progress.log("idle cost of %s over %s", c.name(), profile.idleWindow());
          report.idle(idle.run(c));
          report.write(out);
        }
      }
      if (parts.contains(Part.SCALE)) {
        ScaleBenchmark scale = new ScaleBenchmark(env, profile.scaleWindow());
        for (Duration retry :
            profile.oneKeyCandidates() > 0 ? profile.oneKeyRetries() : List.<Duration>of()) {
          Progress.log("scale: %d loops on one key, retry %s", profile.oneKeyCandidates(), retry);
          report.scale(scale.oneKey(profile.oneKeyCandidates(), retry, "poll"));
          report.write(out);
        }
        if (profile.oneKeyCandidates() > 0) {
          // WAIT holds a session per standby: 100 is already more than a key should have.
          int waiting = Math.min(100, profile.oneKeyCandidates());
          Progress.log("scale: %d loops on one key, WAIT", waiting);
          report.scale(scale.oneKey(waiting, LeaderLoopBuilder.DEFAULT_RETRY_INTERVAL, "wait"));
          report.write(out);
        }
        Progress.log("scale: keys %s", Arrays.toString(profile.keySteps()));
        for (ScaleBenchmark.Result r : scale.manyKeys(profile.keySteps(), 6L << 30)) {
          report.scale(r);
        }
        report.write(out);
      }
      if (parts.contains(Part.HORIZON)) {
        HorizonBenchmark horizon = new HorizonBenchmark(env, profile.smoke());
        Progress.log("horizon: how a waiting session holds back VACUUM");
        report.waysOfWaiting(horizon.waysOfWaiting());
        report.write(out);
        for (HorizonBenchmark.Setup setup :
            HorizonBenchmark.setups(
                horizonTimeouts, horizonStandbys, horizonCap, profile.smoke())) {
          Progress.log("horizon: %s for %s", setup.name(), setup.observe());
          report.horizon(horizon.run(setup));
          report.write(out);
        }
      }
      if (parts.contains(Part.PROOF)) {
        int[] locks = profile.smoke() ? new int[] {0, 1000} : new int[] {0, 1000, 10000, 50000};
        report.proof(new ProofCostBenchmark(env).run(locks, profile.smoke() ? 200 : 2000));
        report.write(out);
      }
      if (parts.contains(Part.HANDOFF)) {
        Progress.log("hand-off: work on the leader's session from another thread");
        report.handOff(new HandOffBenchmark(env).run(profile.smoke() ? 20 : 200));
        report.write(out);
      }
      if (parts.contains(Part.JMH)) {
        Progress.log("JMH");
        report.jmh(jmh(env, profile));
        report.write(out);
      }
    }
    report.write(out);
    Progress.log("done: %s", out.resolve("results.md").toAbsolutePath());
    return out;
  }

  /**
   * The {@code chart} command: one failover chart from the {@code failover.csv} of one or more runs
   * ({@code --csv a.csv,b.csv}), written to {@code --svg FILE}; {@code --title} names it.
   */
  private static Path chart(String... args) throws IOException {
    List<String> lines = new ArrayList<>();
    Path svg = null;
    String title = "Takeover after a fault, every repetition";
    for (int i = 1; i < args.length; i += 2) {
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException(args[i] + " needs a value");
      }
      String v = args[i + 1];
      switch (args[i]) {
        case "--csv" -> {
          for (String f : v.split(",")) {
            lines.addAll(Files.readAllLines(Path.of(f)));
          }
        }
        case "--svg" -> svg = Path.of(v);
        case "--title" -> title = v;
        default -> throw new IllegalArgumentException("unknown option for chart: " + args[i]);
      }
    }
    if (lines.isEmpty() || svg == null) {
      throw new IllegalArgumentException(
          "chart needs --csv FILE[,FILE] (failover.csv of a run) and --svg FILE");
    }
    Files.writeString(svg, SvgChart.failoverFromCsv(lines, title));
    Progress.log("chart: %s", svg.toAbsolutePath());
    return svg.toAbsolutePath().getParent();
  }

  /** The {@code group} command: LeaderGroup members in child JVMs. */
  private static Path group(String... args) throws Exception {
    Path out = defaultOut();
    int keys = 10_000;
    int sessions = LeaderGroup.DEFAULT_SESSIONS;
    int[] members = {2, 10};
    List<int[]> shapes =
        new ArrayList<>(List.of(new int[] {2, 1000}, new int[] {2, 5000}, new int[] {10, 1000}));
    int reps = 5;
    Duration settle = Duration.ofSeconds(3);
    for (int i = 1; i < args.length; i += 2) {
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException(args[i] + " needs a value");
      }
      String v = args[i + 1];
      switch (args[i]) {
        case "--out" -> out = Path.of(v);
        case "--group-keys" -> keys = Integer.parseInt(v);
        case "--group-sessions" -> sessions = Integer.parseInt(v);
        case "--group-members" ->
            members =
                v.equals("none")
                    ? new int[0]
                    : Arrays.stream(v.split(",")).mapToInt(Integer::parseInt).toArray();
        case "--group-shapes" -> {
          shapes.clear();
          if (!v.equals("none")) {
            for (String shape : v.split(",")) {
              String[] mk = shape.split("x");
              if (mk.length != 2) {
                throw new IllegalArgumentException(
                    "--group-shapes takes MEMBERSxKEYS_PER_MEMBER,..., e.g. 2x1000, but was " + v);
              }
              shapes.add(new int[] {Integer.parseInt(mk[0]), Integer.parseInt(mk[1])});
            }
          }
        }
        case "--group-reps" -> reps = Integer.parseInt(v);
        case "--group-settle" -> settle = Duration.ofSeconds(Long.parseLong(v));
        default -> throw new IllegalArgumentException("unknown option for group: " + args[i]);
      }
    }
    Files.createDirectories(out);
    String load = GroupBenchmark.loadAverage();
    Progress.log("group run, results in %s", out.toAbsolutePath());
    List<GroupBenchmark.Result> results = new ArrayList<>();
    try (BenchEnv env = BenchEnv.start(out, 400)) {
      GroupBenchmark bench = new GroupBenchmark(env, out, Duration.ofSeconds(10));
      for (int m : members) {
        results.addAll(bench.run(keys, m, sessions));
        GroupBenchmark.write(out, env.describe(), results, load);
      }
      GroupBenchmark.write(out, env.describe(), results, load);
      List<GroupBenchmark.Departure> departures = new ArrayList<>();
      for (int[] shape : shapes) {
        departures.addAll(bench.departures(shape[0], shape[1], sessions, reps, settle));
        GroupBenchmark.write(out, env.describe(), results, load);
        GroupBenchmark.writeDepartures(out, departures);
      }
    }
    Files.writeString(out.resolve("results.md"), Files.readString(out.resolve("group-results.md")));
    Progress.log("done: %s", out.resolve("group-results.md").toAbsolutePath());
    return out;
  }

  private static List<RunResult> jmh(BenchEnv env, Profile profile) throws RunnerException {
    OptionsBuilder options = new OptionsBuilder();
    options
        .include(LockBenchmarks.class.getName() + "\\.")
        .forks(1)
        .threads(1)
        .warmupIterations(profile.smoke() ? 0 : 2)
        .warmupTime(TimeValue.milliseconds(profile.jmhIterationMillis()))
        .measurementIterations(profile.jmh())
        .measurementTime(TimeValue.milliseconds(profile.jmhIterationMillis()))
        .jvmArgsAppend(
            "-Xmx256m",
            "-Dretsu.bench.jdbcUrl=" + env.jdbcUrl(),
            "-Dretsu.bench.user=" + env.user(),
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")
        // the smoke run's console is the build log: its progress lines, not every JMH iteration
        .verbosity(profile.smoke() ? VerboseMode.SILENT : VerboseMode.NORMAL)
        .shouldFailOnError(true);
    return new ArrayList<>(new Runner(options.build()).run());
  }

  private static Path defaultOut() {
    Path module = Path.of("retsu-lock-benchmarks", "target");
    return (Files.isDirectory(module) ? module : Path.of("target")).resolve("benchmark-results");
  }

  private static Properties versions() {
    Properties p = new Properties();
    try (InputStream in = BenchmarkMain.class.getResourceAsStream("versions.properties")) {
      if (in != null) {
        p.load(in);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return p;
  }

  private static boolean onOff(String option, String value) {
    return switch (value) {
      case "on", "true" -> true;
      case "off", "false" -> false;
      default ->
          throw new IllegalArgumentException(option + " must be on or off, but was " + value);
    };
  }

  private static Profile withReps(Profile p, int reps, int defaultReps) {
    return new Profile(
        p.name(),
        reps,
        defaultReps,
        p.idleWindow(),
        p.scaleWindow(),
        p.oneKeyCandidates(),
        p.oneKeyRetries(),
        p.keySteps(),
        p.jmh(),
        p.jmhIterationMillis(),
        p.smoke());
  }

  private static Profile withOneKey(Profile p, int candidates) {
    return new Profile(
        p.name(),
        p.reps(),
        p.defaultReps(),
        p.idleWindow(),
        p.scaleWindow(),
        candidates,
        p.oneKeyRetries(),
        p.keySteps(),
        p.jmh(),
        p.jmhIterationMillis(),
        p.smoke());
  }

  private static Profile withKeys(Profile p, String keys) {
    int[] steps = Arrays.stream(keys.split(",")).mapToInt(Integer::parseInt).toArray();
    return new Profile(
        p.name(),
        p.reps(),
        p.defaultReps(),
        p.idleWindow(),
        p.scaleWindow(),
        p.oneKeyCandidates(),
        p.oneKeyRetries(),
        steps,
        p.jmh(),
        p.jmhIterationMillis(),
        p.smoke());
  }
}
