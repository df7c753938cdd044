package dev.retsu.lock.benchmarks;

import java.time.LocalTime;
import java.time.temporal.ChronoUnit;
import java.util.Locale;

/** Progress lines on stderr, so stdout stays free for the result tables. */
final class Progress {

  private Progress() {}

  static void log(String format, Object... args) {
    System.err.println(
        LocalTime.now().truncatedTo(ChronoUnit.MILLIS)
            + " "
            + String.format(Locale.ROOT, format, args));
  }
}
