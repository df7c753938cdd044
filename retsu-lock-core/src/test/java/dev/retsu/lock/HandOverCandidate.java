package dev.retsu.lock;

import dev.retsu.lock.testing.ChildJvm;
import dev.retsu.lock.testing.TermChecker;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A candidate JVM for the hand-over and watch tests. Every line it prints starts with {@code T
 * <System.nanoTime()>} (CLOCK_MONOTONIC on Linux: one time base for every process on the machine):
 * {@code READY}, {@code ACQUIRED <term> <token> <pid>}, {@code CHECK <term> <token>}, {@code EFFECT
 * <term> <token>}, {@code LOST <term> <reason>}, the events {@link TermChecker} reads. Its task
 * checks {@code ensureLeader()}, works 2 ms, and returns; refreshes every 50 ms. A SIGTERM closes
 * the loop (a graceful stop).
 *
 * <p>Arguments: jdbcUrl user password candidateId key mode(POLL|WAIT|PREFERRED) [takeoverDelayMs]
 */
public final class HandOverCandidate {

  private HandOverCandidate() {}

  /** The JVM running this candidate, its events kept. */
  static final class Jvm extends ChildJvm {
    Jvm(String name, List<String> arguments) {
      super(
          name,
          new ProcessBuilder(
              ChildJvm.javaCommand(
                  List.of("-Xmx96m", "-XX:TieredStopAtLevel=1"),
                  HandOverCandidate.class,
                  arguments)));
    }

    /** Its events as the term checker reads them. */
    List<TermChecker.Event> events() {
      List<TermChecker.Event> out = new ArrayList<>();
      for (String line : lines()) {
        TermChecker.Event e = parse(name, line);
        if (e != null) {
          out.add(e);
        }
      }
      return out;
    }

    boolean saw(String kind) {
      return events().stream().anyMatch(e -> e.kind().equals(kind));
    }
  }

  /** One event line, or null. */
  static TermChecker.Event parse(String member, String line) {
    String[] f = line.split(" ");
    if (f.length < 3 || !f[0].equals("T")) {
      return null;
    }
    try {
      return new TermChecker.Event(
          Long.parseLong(f[1]), member, f[2], List.of(Arrays.copyOfRange(f, 3, f.length)));
    } catch (NumberFormatException e) {
      return null;
    }
  }

  /**
   * Runs the candidate until the parent ends this JVM.
   *
   * @param args see the class comment
   */
  public static void main(String[] args) {
    PrintStream out = System.out;
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setUrl(args[0]);
    ds.setUser(args[1]);
    ds.setPassword(args[2]);
    String mode = args[5];
    LeaderLoopBuilder b =
        LeaderLoop.builder(ds, LockKey.of(Long.parseLong(args[4])))
            .candidateId(args[3])
            .fastFailover()
            .refreshInterval(Duration.ofMillis(50))
            .takeover(mode.equals("POLL") ? TakeoverMode.POLL : TakeoverMode.WAIT)
            .preferred(mode.equals("PREFERRED"))
            .listener(printing(out));
    if (args.length > 6) {
      b.takeoverDelay(Duration.ofMillis(Long.parseLong(args[6])));
    }
    LeaderLoop loop = b.build();
    Runtime.getRuntime().addShutdownHook(new Thread(loop::close, "retsu-lock-test-shutdown"));
    print(out, "READY");
    loop.run(
        ctx -> {
          ctx.ensureLeader();
          print(out, "CHECK " + ctx.term().number() + " " + ctx.fencingToken());
          LockSupport.parkNanos(2_000_000L);
          print(out, "EFFECT " + ctx.term().number() + " " + ctx.fencingToken());
        });
  }

  /** A listener printing ACQUIRED and LOST. */
  static LeaderListener printing(PrintStream out) {
    return new LeaderListener() {
      @Override
      public void onAcquired(Term term) {
        print(
            out, "ACQUIRED " + term.number() + " " + term.fencingToken() + " " + term.backendPid());
      }

      @Override
      public void onLost(Term term, LossReason reason, Throwable cause) {
        print(out, "LOST " + term.number() + " " + reason);
      }
    };
  }

  static void print(PrintStream out, String event) {
    out.println("T " + System.nanoTime() + " " + event); // println is atomic per line
    out.flush();
  }
}
