package dev.retsu.lock.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * A JVM a test launches from its own class path, its merged output echoed with a {@code [name]}
 * prefix and kept line by line. {@link #close()} kills it for sure and waits for its output to be
 * read. Subclasses add what their program serves (ports, endpoints).
 */
public class ChildJvm implements AutoCloseable {

  /** The name its output lines are prefixed with. */
  public final String name;

  /** The running process. */
  public final Process process;

  private final List<String> lines = new CopyOnWriteArrayList<>();
  private final Thread reader;

  /**
   * Starts the process; its standard error is merged into its output.
   *
   * @param name the prefix of its echoed lines and of the reader thread's name
   * @param builder the command and environment
   */
  protected ChildJvm(String name, ProcessBuilder builder) {
    this.name = name;
    builder.redirectErrorStream(true);
    try {
      this.process = builder.start();
    } catch (IOException e) {
      throw new UncheckedIOException("Starting " + name + " failed: " + builder.command(), e);
    }
    this.reader =
        ProcessOutput.follow(
            process,
            "retsu-lock-test-child-" + name,
            line -> {
              System.out.println("[" + name + "] " + line);
              lines.add(line);
            });
  }

  /**
   * The command line of a JVM on this JVM's class path: this JVM's {@code java}, the options, the
   * class path, the main class and its arguments.
   *
   * @param options JVM options, e.g. {@code -Xmx128m}
   * @param mainClass the class to run
   * @param arguments its arguments
   * @return the command
   */
  public static List<String> javaCommand(
      List<String> options, Class<?> mainClass, List<String> arguments) {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.addAll(options);
    command.addAll(List.of("-cp", System.getProperty("java.class.path"), mainClass.getName()));
    command.addAll(arguments);
    return command;
  }

  /**
   * A loopback port nobody listens on right now.
   *
   * @return the port
   */
  public static int freePort() {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * The lines read so far.
   *
   * @return a live, thread-safe view
   */
  public List<String> lines() {
    return lines;
  }

  /**
   * Whether a line read so far contains the fragment.
   *
   * @param fragment the text to look for
   * @return true if some line contains it
   */
  public boolean logged(String fragment) {
    return lines.stream().anyMatch(l -> l.contains(fragment));
  }

  /**
   * Whether the process has exited and all its output has been read, so that assertions on its last
   * lines do not race with the reader.
   *
   * @return true once both hold
   */
  public boolean exitedAndDrained() {
    if (process.isAlive()) {
      return false;
    }
    try {
      reader.join(100);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return !reader.isAlive();
  }

  /**
   * Asks the process to stop gracefully (SIGTERM, so its shutdown hooks run) and keeps reading its
   * output: unlike {@link Process#destroy()}, which closes the pipes at once on Unix and loses what
   * the hooks print.
   */
  public void sigterm() {
    process.toHandle().destroy();
  }

  /** Kills the process if it still runs and waits for it and its output. Never throws. */
  @Override
  public void close() {
    if (process.isAlive()) {
      process.destroyForcibly();
    }
    try {
      process.waitFor(20, TimeUnit.SECONDS);
      reader.join(2000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
