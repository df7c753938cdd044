package dev.retsu.lock;

import java.time.Duration;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A candidate in its own JVM, for multi-process tests. Prints one line per event on stdout: {@code
 * ACQUIRED <term> <token> <pid>}, {@code REFRESH <token>}, {@code LOST <reason>}, and at the end
 * {@code STOPPED} (exit 0) or {@code EXIT <reason> <sqlstate>} (exit 3).
 *
 * <p>Arguments: jdbcUrl user candidateId key intervalMillis
 */
public final class CandidateProcess {

  private CandidateProcess() {}

  /**
   * Runs the candidate.
   *
   * @param args jdbcUrl user candidateId key intervalMillis
   */
  public static void main(String[] args) {
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setUrl(args[0]);
    ds.setUser(args[1]);
    Duration interval = Duration.ofMillis(Long.parseLong(args[4]));
    LeaderLoop loop =
        LeaderLoop.builder(ds, LockKey.of(Long.parseLong(args[3])))
            .candidateId(args[2])
            .failurePolicy(FailurePolicy.EXIT)
            .retryInterval(interval)
            .refreshInterval(interval)
            .heartbeatInterval(Duration.ofMillis(100))
            .listener(
                new LeaderListener() {
                  @Override
                  public void onAcquired(Term term) {
                    System.out.println(
                        "ACQUIRED "
                            + term.number()
                            + " "
                            + term.fencingToken()
                            + " "
                            + term.backendPid());
                  }

                  @Override
                  public void onLost(Term term, LossReason reason, Throwable cause) {
                    System.out.println("LOST " + reason);
                  }
                })
            .build();
    Runtime.getRuntime().addShutdownHook(new Thread(loop::close, "retsu-lock-test-shutdown"));
    try {
      loop.run(ctx -> System.out.println("REFRESH " + ctx.fencingToken()));
      System.out.println("STOPPED");
      System.exit(0);
    } catch (LeadershipLostException e) {
      System.out.println("EXIT " + e.reason() + " " + e.sqlState().orElse("-"));
      System.exit(3);
    }
  }
}
