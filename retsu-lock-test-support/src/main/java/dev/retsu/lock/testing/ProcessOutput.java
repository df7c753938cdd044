package dev.retsu.lock.testing;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.function.Consumer;

/** Follows a child process's standard output line by line, for tests that read its protocol. */
public final class ProcessOutput {

  private ProcessOutput() {}

  /**
   * Starts a daemon thread that hands every line of the process's standard output to {@code onLine}
   * until the stream ends.
   *
   * @param process the child process
   * @param threadName the reader thread's name, e.g. {@code retsu-lock-test-reader-a}
   * @param onLine called on the reader thread for each line
   * @return the started reader thread; join it to be sure every line was read
   */
  public static Thread follow(Process process, String threadName, Consumer<String> onLine) {
    Thread reader =
        new Thread(
            () -> {
              try (BufferedReader r =
                  new BufferedReader(
                      new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                  onLine.accept(line);
                }
              } catch (IOException e) {
                onLine.accept("READ-ERROR " + e);
              }
            },
            threadName);
    reader.setDaemon(true);
    reader.start();
    return reader;
  }
}
