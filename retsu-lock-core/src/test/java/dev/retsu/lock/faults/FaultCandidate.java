package dev.retsu.lock.faults;

import dev.retsu.lock.FailurePolicy;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LeadershipLostException;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.TakeoverMode;
import dev.retsu.lock.Term;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A candidate JVM for the fault suite. Every line it prints on stdout starts with {@code T
 * <System.nanoTime()>}; on Linux that is CLOCK_MONOTONIC, one clock for every process on the
 * machine, so the parent compares the children's events on one time base. Events:
 *
 * <ul>
 *   <li>{@code READY}; {@code ATTEMPT <result>}; {@code ACQUIRED <term> <token> <pid>}; {@code WORK
 *       <term> <token>} for each refresh that passed {@code ensureLeader()}, stamped with the time
 *       just before the check; {@code LOST <term> <reason>}; {@code EXIT <reason> <sqlstate>} or
 *       {@code STOPPED}.
 * </ul>
 *
 * <p>It reads commands on stdin: {@code THROW} (the next refresh throws) and {@code HANG} (the next
 * refresh blocks until interrupted). Runs under {@link FailurePolicy#STEP_DOWN} with the fast
 * bounds of {@link FaultTiming}.
 *
 * <p>Arguments: jdbcUrl user password candidateId key takeover(POLL|WAIT)
 */
public final class FaultCandidate {

  private static final PrintStream OUT = System.out;
  private static volatile String command = "";

  private FaultCandidate() {}

  static void emit(String event) {
    OUT.println("T " + System.nanoTime() + " " + event);
  }

  /**
   * Runs the candidate.
   *
   * @param args jdbcUrl user password candidateId key takeover
   */
  public static void main(String[] args) {
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setUrl(args[0]);
    ds.setUser(args[1]);
    if (!args[2].isEmpty()) {
      ds.setPassword(args[2]);
    }
    ds.setConnectTimeout(2);
    LeaderLoop loop =
        FaultTiming.fast(LeaderLoop.builder(ds, LockKey.of(Long.parseLong(args[4]))))
            .candidateId(args[3])
            .takeover(TakeoverMode.valueOf(args[5]))
            .failurePolicy(FailurePolicy.STEP_DOWN)
            .listener(
                new LeaderListener() {
                  @Override
                  public void onAcquired(Term term) {
                    emit(
                        "ACQUIRED "
                            + term.number()
                            + " "
                            + term.fencingToken()
                            + " "
                            + term.backendPid());
                  }

                  @Override
                  public void onLost(Term term, LossReason reason, Throwable cause) {
                    emit("LOST " + term.number() + " " + reason);
                  }

                  @Override
                  public void onAttempt(
                      dev.retsu.lock.AttemptResult result, Duration duration, Throwable error) {
                    emit("ATTEMPT " + result);
                  }
                })
            .build();
    Thread commands =
        new Thread(
            () -> {
              try (BufferedReader in =
                  new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                  command = line.trim();
                }
              } catch (java.io.IOException e) {
                emit("STDIN-CLOSED");
              }
            },
            "retsu-lock-test-commands");
    commands.setDaemon(true);
    commands.start();
    Runtime.getRuntime().addShutdownHook(new Thread(loop::close, "retsu-lock-test-shutdown"));
    emit("READY");
    try {
      loop.run(
          ctx -> {
            String c = command;
            if (c.equals("THROW")) {
              command = "";
              throw new IllegalStateException("told to throw");
            }
            if (c.equals("HANG")) {
              command = "";
              Thread.sleep(Duration.ofHours(1).toMillis());
            }
            // The work's logical time is taken before the check: if ensureLeader() passes, this
            // instant was before the self-fencing deadline, whatever pauses follow.
            long checkedAt = System.nanoTime();
            ctx.ensureLeader();
            OUT.println(
                "T " + checkedAt + " WORK " + ctx.term().number() + " " + ctx.fencingToken());
          });
      emit("STOPPED");
    } catch (LeadershipLostException e) {
      emit("EXIT " + e.reason() + " " + e.sqlState().orElse("-"));
      System.exit(3);
    } catch (RuntimeException e) {
      emit("EXIT " + e.getClass().getSimpleName() + " -");
      System.exit(4);
    }
  }
}
