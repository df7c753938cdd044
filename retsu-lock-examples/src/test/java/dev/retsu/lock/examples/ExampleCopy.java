package dev.retsu.lock.examples;

import dev.retsu.lock.testing.ChildJvm;
import dev.retsu.lock.testing.TestDatabase;
import java.util.List;
import java.util.Map;

/**
 * One copy of an example program in its own JVM, as a user starts it: its {@code main}, with the
 * database in RETSU_DATABASE__URL, __USER and __PASSWORD, and its output kept for the test.
 */
public class ExampleCopy extends ChildJvm {

  /**
   * Starts a copy.
   *
   * @param name the copy's name, prefixed to its output lines
   * @param main the example's main class
   * @param db the database it runs against
   */
  public ExampleCopy(String name, Class<?> main, TestDatabase db) {
    super(name, builder(main, db));
  }

  private static ProcessBuilder builder(Class<?> main, TestDatabase db) {
    ProcessBuilder pb =
        new ProcessBuilder(
            ChildJvm.javaCommand(
                List.of("-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"),
                main,
                List.of()));
    Map<String, String> env = pb.environment();
    env.put("RETSU_DATABASE__URL", db.jdbcUrl());
    env.put("RETSU_DATABASE__USER", db.user());
    env.put("RETSU_DATABASE__PASSWORD", db.password());
    return pb;
  }

  /**
   * Returns what the copy printed so far, one line after another.
   *
   * @return the output
   */
  public String output() {
    return String.join("\n", lines());
  }
}
