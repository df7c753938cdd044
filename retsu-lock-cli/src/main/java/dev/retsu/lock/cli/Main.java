package dev.retsu.lock.cli;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The entry point of the runnable jar: {@code java -jar retsu-lock-cli-<version>-all.jar --help}.
 * See docs/cli.md for the commands, options, exit codes and JSON shapes.
 */
public final class Main {

  private Main() {}

  /**
   * Runs the command line and exits with its code. Ctrl-C stops a {@code --watch}: its session is
   * closed before the process ends.
   *
   * @param args the arguments
   */
  public static void main(String[] args) {
    CountDownLatch stop = new CountDownLatch(1);
    CountDownLatch done = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  stop.countDown();
                  try {
                    done.await(5, TimeUnit.SECONDS);
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                },
                "retsu-lock-cli-shutdown"));
    int code;
    try {
      code =
          Cli.run(
              args, new Cli.Io(System.out, System.err, System.getenv(), Terminal.system(), stop));
    } finally {
      done.countDown();
    }
    System.exit(code);
  }
}
