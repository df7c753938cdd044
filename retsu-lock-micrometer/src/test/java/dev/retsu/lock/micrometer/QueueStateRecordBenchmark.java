package dev.retsu.lock.micrometer;

import dev.retsu.lock.FencingToken;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.Term;
import dev.retsu.lock.micrometer.internal.QueueFolding;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.function.IntSupplier;

/**
 * Measures what {@link QueueStateMetrics#record} costs for a 10,000-queue snapshot with a series
 * budget of 100, on a {@link PrometheusMeterRegistry}. Not a test: no assertion, no pass or fail.
 * Run from the repository root with
 *
 * <pre>
 * ./mvnw -B -ntp -pl retsu-lock-micrometer -am -Pbenchmark process-test-classes
 * </pre>
 *
 * <p>Writes {@code retsu-lock-micrometer/target/benchmark/queue-state-record.txt}. Each case is
 * warmed up, then all are timed round-robin; the report gives the best, median and worst round. On
 * a shared machine the best round is the closest to the real cost.
 */
public final class QueueStateRecordBenchmark {

  private static final int QUEUES = 10_000;
  private static final int BUDGET = 100;
  private static final int VARIANTS = 16;
  private static final int WARMUP_OPS = 2_000;
  private static final int ROUNDS = 7;
  private static final int OPS_PER_ROUND = 300;

  private QueueStateRecordBenchmark() {}

  /**
   * Runs the benchmark.
   *
   * @param args optional: the output file
   * @throws IOException if the report cannot be written
   */
  public static void main(String[] args) throws IOException {
    Path out =
        Path.of(args.length > 0 ? args[0] : "target/benchmark/queue-state-record.txt")
            .toAbsolutePath();
    StringBuilder report = new StringBuilder();
    report.append(
        String.format(
            Locale.ROOT,
            "QueueStateMetrics.record: %,d queues, budget %d, PrometheusMeterRegistry%n"
                + "java %s on %s, %d processors%n"
                + "load average before: %s%n"
                + "warm-up %,d ops; %d rounds of %,d ops; microseconds per op%n%n",
            QUEUES,
            BUDGET,
            System.getProperty("java.version"),
            System.getProperty("os.arch"),
            Runtime.getRuntime().availableProcessors(),
            loadAverage(),
            WARMUP_OPS,
            ROUNDS,
            OPS_PER_ROUND));

    // Values drift but the ranking holds: the same 100 queues are kept every time.
    List<QueueStateSnapshot> stable = snapshots(Mode.STABLE_RANKING);
    // Values drift a little, so a few queues near the 100th place swap in and out.
    List<QueueStateSnapshot> drift = snapshots(Mode.DRIFT);
    // Backlogs reshuffled every time: most of the kept 100 change, so series are added and removed.
    List<QueueStateSnapshot> churn = snapshots(Mode.RESHUFFLE);

    List<String> names =
        List.of(
            "record, same top 100",
            "record, top 100 drifts",
            "record, top 100 reshuffled",
            "fold only (in each record)",
            "build + validate snapshot");
    List<IntSupplier> ops =
        List.of(recorder(stable), recorder(drift), recorder(churn), folder(drift), builder());
    report.append(measure(names, ops));

    System.out.print(report);
    Files.createDirectories(out.getParent());
    Files.writeString(out, report.toString());
    System.out.println("written to " + out);
  }

  private static String loadAverage() {
    try {
      return Files.readString(Path.of("/proc/loadavg")).strip();
    } catch (IOException | RuntimeException e) {
      return "unknown";
    }
  }

  private static IntSupplier recorder(List<QueueStateSnapshot> snapshots) {
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    QueueStateMetrics metrics =
        QueueStateMetrics.builder(TestTerms.idleLoop(LockKey.of(1L), "bench"))
            .maxQueueSeries(BUDGET)
            .build();
    metrics.bindTo(registry);
    metrics
        .listenerForTests()
        .onAcquired(
            new Term(1, LockKey.of(1L), "bench", Instant.now(), new FencingToken(1, 0, 1), 1));
    int[] i = {0};
    return () -> {
      boolean ok = metrics.record(snapshots.get(i[0]++ % snapshots.size()));
      return ok ? 1 : -1;
    };
  }

  private static IntSupplier folder(List<QueueStateSnapshot> snapshots) {
    int[] i = {0};
    return () ->
        QueueFolding.fold(snapshots.get(i[0]++ % snapshots.size()).queues(), BUDGET).folded();
  }

  private static IntSupplier builder() {
    List<List<QueueState>> variants = new ArrayList<>();
    for (QueueStateSnapshot s : snapshots(Mode.DRIFT)) {
      variants.add(s.queues());
    }
    int[] i = {0};
    return () ->
        QueueStateSnapshot.of(variants.get(i[0]++ % variants.size()), Duration.ofMillis(30))
            .queues()
            .size();
  }

  /**
   * Warms every case up, then times them round-robin, one round of each per pass, so that a change
   * in the machine's load during the run falls on every case alike.
   */
  private static String measure(List<String> names, List<IntSupplier> ops) {
    long sink = 0;
    for (IntSupplier op : ops) {
      for (int i = 0; i < WARMUP_OPS; i++) {
        sink += op.getAsInt();
      }
    }
    double[][] perOp = new double[ops.size()][ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
      for (int c = 0; c < ops.size(); c++) {
        IntSupplier op = ops.get(c);
        long start = System.nanoTime();
        for (int i = 0; i < OPS_PER_ROUND; i++) {
          sink += op.getAsInt();
        }
        perOp[c][r] = (System.nanoTime() - start) / 1_000.0 / OPS_PER_ROUND;
      }
    }
    StringBuilder out = new StringBuilder();
    for (int c = 0; c < ops.size(); c++) {
      double[] sorted = perOp[c].clone();
      Arrays.sort(sorted);
      out.append(
          String.format(
              Locale.ROOT,
              "%-28s best %8.1f   median %8.1f   worst %8.1f  us/op%n",
              names.get(c),
              sorted[0],
              sorted[ROUNDS / 2],
              sorted[ROUNDS - 1]));
    }
    return out.append(String.format(Locale.ROOT, "(checksum %d)%n", sink)).toString();
  }

  private enum Mode {
    STABLE_RANKING,
    DRIFT,
    RESHUFFLE
  }

  private static List<QueueStateSnapshot> snapshots(Mode mode) {
    Random random = new Random(42);
    List<QueueStateSnapshot> out = new ArrayList<>();
    long[] base = new long[QUEUES];
    // Distinct base backlogs in random order: a permutation of 0..QUEUES-1.
    for (int q = 0; q < QUEUES; q++) {
      base[q] = q;
    }
    for (int q = QUEUES - 1; q > 0; q--) {
      int j = random.nextInt(q + 1);
      long t = base[q];
      base[q] = base[j];
      base[j] = t;
    }
    for (int v = 0; v < VARIANTS; v++) {
      List<QueueState> queues = new ArrayList<>(QUEUES);
      for (int q = 0; q < QUEUES; q++) {
        long ready =
            switch (mode) {
              case STABLE_RANKING -> base[q] * 1_000 + random.nextInt(5);
              case DRIFT -> base[q] + random.nextInt(5);
              case RESHUFFLE -> random.nextInt(10_000);
            };
        queues.add(
            new QueueState(
                "queue-" + q,
                ready,
                random.nextInt(100),
                random.nextInt(50),
                random.nextInt(10),
                random.nextInt(3_600_000) / 1000.0));
      }
      out.add(QueueStateSnapshot.of(queues, Duration.ofMillis(30)));
    }
    return out;
  }
}
