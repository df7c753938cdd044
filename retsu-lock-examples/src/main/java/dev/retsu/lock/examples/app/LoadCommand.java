package dev.retsu.lock.examples.app;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.examples.collector.Schema;
import dev.retsu.lock.examples.load.QueueLoad;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.LocalTime;
import java.time.format.DateTimeFormatter;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/** The {@code load} command: a {@link QueueLoad} against RETSU_DATABASE__URL until stopped. */
public final class LoadCommand {

  private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("HH:mm:ss");

  private LoadCommand() {}

  /**
   * Runs the load until Ctrl-C or the configured duration.
   *
   * @param settings the load's settings
   * @param out where progress lines go
   * @return the exit status: {@link Main#OK}, or {@link Main#FAILED} on a database error
   */
  public static int run(Settings.Load settings, PrintStream out) {
    AtomicBoolean stop = new AtomicBoolean();
    CountDownLatch stopped = new CountDownLatch(1);
    Thread hook =
        new Thread(
            () -> {
              stop.set(true);
              try {
                stopped.await(5, TimeUnit.SECONDS);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
              out.flush();
              Runtime.getRuntime().halt(0);
            },
            "retsu-lock-examples-load-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);
    HikariConfig config = new HikariConfig();
    config.setPoolName("retsu-lock-examples-load");
    config.setJdbcUrl(settings.database().url().orElseThrow());
    settings.database().user().ifPresent(config::setUsername);
    settings.database().password().ifPresent(config::setPassword);
    config.setMaximumPoolSize(Math.min(4, settings.database().poolSize()));
    try (HikariDataSource pool = new HikariDataSource(config)) {
      try (Connection c = pool.getConnection()) {
        Schema.migrate(c);
      }
      QueueLoad load =
          new QueueLoad(pool, settings.queues(), settings.ratePerSecond(), System.nanoTime());
      out.printf(
          "%s load: %d queues (%s .. %s), %d msg/s%s; Ctrl-C stops%n",
          LocalTime.now().format(TIME),
          settings.queues(),
          load.queues().get(0),
          load.queues().get(load.queues().size() - 1),
          settings.ratePerSecond(),
          settings.duration().map(d -> " for " + Options.format(d)).orElse(""));
      load.run(
          settings.duration().orElse(null),
          settings.progressInterval(),
          line -> out.println(LocalTime.now().format(TIME) + " " + line),
          stop::get);
      out.println(LocalTime.now().format(TIME) + " " + load.progressLine());
      return Main.OK;
    } catch (SQLException | RuntimeException e) {
      out.println("load failed: " + e);
      return Main.FAILED;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Main.OK;
    } finally {
      stopped.countDown();
      if (!stop.get()) {
        try {
          Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException shuttingDown) {
          // the hook runs: it halts with 0 once we are done
        }
      }
    }
  }
}
