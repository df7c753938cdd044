package dev.retsu.lock.benchmarks;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Order statistics of a list of durations in microseconds; p95 by nearest rank.
 *
 * @param n number of values
 * @param min smallest
 * @param median middle (mean of the two middle values for even n)
 * @param p95 95th percentile, nearest rank
 * @param max largest
 */
record Stats(int n, long min, long median, long p95, long max) {

  static Stats of(List<Long> micros) {
    if (micros.isEmpty()) {
      return new Stats(0, -1, -1, -1, -1);
    }
    long[] v = micros.stream().mapToLong(Long::longValue).toArray();
    Arrays.sort(v);
    int n = v.length;
    long median = n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    int rank = (int) Math.ceil(0.95 * n);
    return new Stats(n, v[0], median, v[Math.max(0, rank - 1)], v[n - 1]);
  }

  static String ms(long micros) {
    if (micros < 0) {
      return "n/a";
    }
    double ms = micros / 1000.0;
    return ms >= 100
        ? String.format(Locale.ROOT, "%.0f", ms)
        : String.format(Locale.ROOT, "%.1f", ms);
  }
}
