package dev.retsu.lock.fakes;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * What the code under test logs while an action runs: the tests log through slf4j-simple, which
 * writes each line to the {@code System.err} of the moment. The captured text is also printed to
 * the real stderr afterwards, so the test's output keeps it.
 */
public final class StderrCapture {

  /** An action that may throw. */
  public interface Action {
    void run() throws Exception;
  }

  private StderrCapture() {}

  /** Runs {@code action} and returns what was written to {@code System.err} meanwhile. */
  public static String during(Action action) throws Exception {
    PrintStream saved = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    try {
      action.run();
    } finally {
      System.setErr(saved);
    }
    String out = captured.toString(StandardCharsets.UTF_8);
    saved.print(out);
    return out;
  }
}
