package dev.retsu.lock.cli;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

/** One in-process run of the CLI with captured output; {@link #stop} ends a --watch. */
final class CliRun {

  final ByteArrayOutputStream out = new ByteArrayOutputStream();
  final ByteArrayOutputStream err = new ByteArrayOutputStream();
  final CountDownLatch stop = new CountDownLatch(1);
  private final Map<String, String> env;
  private final Terminal terminal;

  CliRun(Map<String, String> env, Terminal terminal) {
    this.env = env;
    this.terminal = terminal;
  }

  static CliRun plain() {
    return new CliRun(Map.of(), Terminal.NONE);
  }

  int run(String... args) {
    return Cli.run(
        args,
        new Cli.Io(
            new PrintStream(out, true, StandardCharsets.UTF_8),
            new PrintStream(err, true, StandardCharsets.UTF_8),
            env,
            terminal,
            stop));
  }

  String out() {
    return out.toString(StandardCharsets.UTF_8);
  }

  String err() {
    return err.toString(StandardCharsets.UTF_8);
  }

  List<String> outLines() {
    String o = out();
    return o.isEmpty() ? List.of() : new ArrayList<>(Arrays.asList(o.split("\n")));
  }

  /** A terminal that answers every question with {@code answer}. */
  static Terminal answering(String answer, List<String> asked) {
    return new Terminal() {
      @Override
      public boolean interactive() {
        return true;
      }

      @Override
      public String readLine(String prompt) {
        asked.add(prompt);
        return answer;
      }
    };
  }
}
