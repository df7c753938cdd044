package dev.retsu.lock;

import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The README's first program, "A leader in 30 lines", as the reader pastes it into a {@code main}:
 * a test runs it in a JVM of its own and asserts that it leads, runs the task and keeps running
 * until it is stopped (a program that returned from {@code main} at once would never run the task).
 */
public final class SendInvoices {

  private SendInvoices() {}

  /**
   * Runs the README's program.
   *
   * @param args the JDBC URL, the user and the password of the database
   */
  public static void main(String[] args) {
    PGSimpleDataSource dataSource = new PGSimpleDataSource();
    dataSource.setURL(args[0]);
    dataSource.setUser(args[1]);
    dataSource.setPassword(args[2]);
    // snippet:core/leader
    LeaderLoop loop =
        LeaderLoop.builder(dataSource, LockKey.named("billing", "send-invoices"))
            .refreshInterval(Duration.ofMinutes(1)) // the period, from the end of one run
            .refreshTimeout(Duration.ofMinutes(10)) // a longer run is interrupted; term ends
            .build();
    CompletableFuture<Void> stopped =
        loop.start(
            ctx -> { // on the leader only, every period, on the session that holds the lock
              List<Long> due = new ArrayList<>();
              try (Statement s = ctx.connection().createStatement();
                  ResultSet rs = s.executeQuery("SELECT id FROM invoices WHERE state = 'queued'")) {
                while (rs.next()) {
                  due.add(rs.getLong(1));
                }
              }
              for (long id : due) {
                ctx.ensureLeader(); // right before the effect: throws once this term is over
                System.out.println(
                    "send invoice " + id + " under fencing token " + ctx.fencingToken());
              }
            });
    // Ctrl-C (or SIGTERM) closes the loop: a running task is stopped before the lock is released.
    Runtime.getRuntime().addShutdownHook(new Thread(loop::close, "send-invoices-shutdown"));
    // start() returned at once: the loop runs on a daemon thread of its own, so main waits here
    // until close() completes `stopped`, or throws if the loop gave up (a transaction pooler, say)
    stopped.join();
    // end-snippet
  }
}
