package dev.retsu.lock.examples.app;

import dev.retsu.lock.examples.collector.QueueStateCollector;
import java.io.PrintStream;
import java.util.List;
import java.util.Map;

/**
 * Entry point of {@code retsu-lock-examples.jar}: {@code collector}, {@code load}, {@code demo} and
 * {@code postgres}.
 *
 * <pre>
 * java -jar retsu-lock-examples.jar demo
 * RETSU_DATABASE__URL=jdbc:postgresql://localhost/retsu java -jar retsu-lock-examples.jar collector
 * </pre>
 *
 * <p>Exit status: 0 on success or after SIGTERM / Ctrl-C, 1 when the worker fails (leadership lost,
 * database error), 2 for a bad command line or setting.
 */
public final class Main {

  /** Exit status after success, or after SIGTERM / Ctrl-C. */
  public static final int OK = 0;

  /** Exit status when the worker fails: leadership lost, database error, port in use. */
  public static final int FAILED = 1;

  /** Exit status for a bad command line or setting. */
  public static final int USAGE = 2;

  private static final String OVERVIEW =
      """
      retsu-lock examples: the queue state-metrics collector on PostgreSQL advisory locks.

      Usage: java -jar retsu-lock-examples.jar <command> [options]

      Commands:
        collector  run one collector replica: only the leader exports queue-state gauges
        load       enqueue and consume messages across N queues so the gauges move
        demo       start PostgreSQL, two or three collectors and some load; kill the leader
                   and show a standby taking over
        postgres   start a throwaway PostgreSQL to try your own application on; print its
                   JDBC URL and run until Ctrl-C

      '<command> --help' lists each command's options and environment variables.
      """;

  private Main() {}

  /**
   * Runs a command and exits with its status.
   *
   * @param args the command and its options
   */
  public static void main(String[] args) {
    System.exit(run(args, System.getenv(), System.out, System.err));
  }

  /**
   * Runs a command; returns the exit status.
   *
   * @param args the command and its options
   * @param env the environment to read settings from
   * @param out where help and the demo's timeline go
   * @param err where usage errors go
   * @return the exit status: {@link #OK}, {@link #FAILED} or {@link #USAGE}
   */
  public static int run(String[] args, Map<String, String> env, PrintStream out, PrintStream err) {
    if (args.length == 0 || List.of("--help", "-h", "help").contains(args[0])) {
      (args.length == 0 ? err : out).print(OVERVIEW);
      return args.length == 0 ? USAGE : OK;
    }
    String command = args[0];
    List<String> rest = Options.rest(args, 1);
    try {
      switch (command) {
        case "collector" -> {
          if (Options.wantsHelp(rest)) {
            out.print(
                Options.usage(
                    command,
                    "Runs one queue state-metrics collector replica. Every replica contends for"
                        + " the advisory lock "
                        + QueueStateCollector.KEY
                        + ";\nthe leader reads the queue-state rollup on the lock's own session"
                        + " every interval and\nexports queue_messages_* gauges; standbys retry"
                        + " every interval. Logs exactly\n'"
                        + CollectorCommand.ACQUIRED_LINE
                        + "' when it becomes leader.\nExits 1 when leadership is lost or the"
                        + " database fails at start, 0 after SIGTERM/Ctrl-C.",
                    Settings.COLLECTOR));
            return OK;
          }
          return new CollectorCommand(Settings.Collector.from(rest, env)).run();
        }
        case "load" -> {
          if (Options.wantsHelp(rest)) {
            out.print(
                Options.usage(
                    command,
                    "Enqueues and consumes messages across N queues (queue-1 busiest) at a rate,"
                        + " printing a\nprogress line; runs until Ctrl-C or --duration.",
                    Settings.LOAD));
            return OK;
          }
          return LoadCommand.run(Settings.Load.from(rest, env), out);
        }
        case "demo" -> {
          if (Options.wantsHelp(rest)) {
            out.print(
                Options.usage(
                    command,
                    "Starts an embedded PostgreSQL, seeds queues and keeps a light load going,"
                        + " launches collector\nprocesses on consecutive management ports, shows"
                        + " who leads and what each /metrics exports,\nstops the leader and"
                        + " measures how long a standby takes to take over; then cleans up.",
                    Settings.DEMO));
            return OK;
          }
          return new DemoCommand(Settings.Demo.from(rest, env), out).run();
        }
        case "postgres" -> {
          if (Options.wantsHelp(rest)) {
            out.print(
                Options.usage(
                    command,
                    "Starts a throwaway PostgreSQL (the embedded binaries the demo uses; nothing"
                        + " is installed),\nprints its JDBC URL and runs until Ctrl-C, which"
                        + " stops it and deletes its data.",
                    Settings.POSTGRES));
            return OK;
          }
          return new PostgresCommand(Settings.Postgres.from(rest, env), out).run();
        }
        default -> {
          err.println("Unknown command '" + command + "'.");
          err.print(OVERVIEW);
          return USAGE;
        }
      }
    } catch (ConfigException e) {
      err.println("Error: " + e.getMessage());
      return USAGE;
    }
  }
}
