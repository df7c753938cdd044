package dev.retsu.lock.examples.app;

import dev.retsu.lock.testing.EmbeddedPostgresServer;
import java.io.PrintStream;
import java.util.List;
import java.util.concurrent.CountDownLatch;

/**
 * {@code postgres}: a throwaway PostgreSQL to try your own application on. Starts the embedded
 * server the demo and the tests use (binaries from the jar, nothing installed), prints its JDBC
 * URL, and runs until Ctrl-C, which stops it and deletes its data. Not thread-safe; run once.
 */
public final class PostgresCommand {

  /** The line that carries the URL, for scripts and the test: {@code JDBC URL: jdbc:...}. */
  public static final String URL_LINE = "JDBC URL: ";

  private final Settings.Postgres settings;
  private final PrintStream out;
  private final CountDownLatch stopped = new CountDownLatch(1);

  /**
   * Creates the command.
   *
   * @param settings its settings
   * @param out where the URL goes
   */
  public PostgresCommand(Settings.Postgres settings, PrintStream out) {
    this.settings = settings;
    this.out = out;
  }

  /**
   * Starts the server and waits until the process is told to stop (Ctrl-C, SIGTERM).
   *
   * @return {@link Main#OK} once stopped
   */
  public int run() {
    for (String quiet : List.of("io.zonky.test", "dev.retsu.lock.testing")) {
      String property = "org.slf4j.simpleLogger.log." + quiet;
      if (System.getProperty(property) == null) {
        System.setProperty(property, "warn");
      }
    }
    EmbeddedPostgresServer.Builder builder = EmbeddedPostgresServer.builder();
    settings.port().ifPresent(builder::port);
    out.println("Starting a throwaway PostgreSQL (binaries from the jar; nothing is installed)...");
    EmbeddedPostgresServer server = builder.start();
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  server.close(); // stops it and deletes its data directory
                  out.println("PostgreSQL stopped; its data is gone.");
                  stopped.countDown();
                },
                "retsu-lock-examples-postgres-shutdown"));
    out.println(URL_LINE + server.jdbcUrl("postgres"));
    out.println("user: " + server.user() + ", no password");
    out.println(
        "psql: psql -h 127.0.0.1 -p " + server.port() + " -U " + server.user() + " postgres");
    out.println("Press Ctrl-C to stop it; its data is deleted then.");
    out.flush();
    try {
      stopped.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return Main.OK;
  }
}
