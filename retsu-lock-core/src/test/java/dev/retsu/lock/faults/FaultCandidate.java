package dev.retsu.lock.faults;

import dev.retsu.lock.FailurePolicy;
import dev.retsu.lock.LeaderContext;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LeaderLoopBuilder;
import dev.retsu.lock.LeadershipLostException;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.TakeoverMode;
import dev.retsu.lock.Term;
import dev.retsu.lock.testing.ChildJvm;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.atomic.AtomicReference;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The one candidate JVM of the tests: the fault suite's members, and the multi-process and security
 * tests' candidates ({@link #command} builds its command line). Every line it prints on stdout
 * starts with {@code T <System.nanoTime()>}; on Linux that is CLOCK_MONOTONIC, one clock for every
 * process on the machine, so the parent compares the children's events on one time base.
 *
 * <p>Its leader task is the suite's {@link TimedTask}: a random wait before {@link
 * LeaderContext#ensureLeader()} and one after it until the effect the check guards. Events:
 *
 * <ul>
 *   <li>{@code READY}; {@code ATTEMPT <result>}; {@code ACQUIRED <term> <token> <pid>}; {@code LOST
 *       <term> <reason>}; {@code EXIT <reason> <sqlstate>} or {@code STOPPED};
 *   <li>{@code CHECK <term> <token>}, stamped right after {@code ensureLeader()} passed: from here
 *       the candidate acts as leader;
 *   <li>{@code EFFECT <term> <token>}, stamped right after the effect: here it stops acting;
 *   <li>{@code ARMED <phase> <action>} when it read an {@code ARM} command, and {@code PHASE
 *       <phase> <term>} when the armed phase begins (see below).
 * </ul>
 *
 * <p>Task modes: {@code PLAIN}, {@code TX}, {@code MIXED} (see {@link TimedTask}).
 *
 * <p>It reads commands on stdin: {@code ARM <phase> <action> <lingerMs>}. The phase is where the
 * parent wants a fault to land: {@code PRE} (the task runs, before the check), {@code POST} (after
 * the check, before the effect), {@code TX} (like {@code PRE}, but inside an open transaction, for
 * one refresh even in {@code PLAIN} mode), {@code BETWEEN} (the task returned; the loop waits for
 * the next refresh), {@code CLOSE} (inside {@link LeaderLoop#close()}: the {@code onLost(CLOSED)}
 * listener). At the phase the candidate prints {@code PHASE}, does the action, and makes the phase
 * last at least {@code lingerMs} so that a fault the parent injects on seeing {@code PHASE} lands
 * inside it. Actions: {@code NONE} (the parent injects), {@code THROW} (the task throws), {@code
 * HANG} (the task blocks until interrupted), {@code UNLOCK_ALL} (user code runs {@code SELECT
 * pg_advisory_unlock_all()} on the lease's connection), {@code IDLE} (the task idles {@code
 * lingerMs}, e.g. in a transaction), and the user-SQL actions ({@code UNLOCK_FUNCTION}, {@code
 * UNLOCK_PREPARED}, {@code UNLOCK_ESCAPED}, {@code RESET_ALL}, {@code RESET_FUNCTION}) after which
 * the task keeps issuing statements and checks for the whole phase (see {@link TimedTask}).
 *
 * <p>Runs with the fast bounds of {@link FaultTiming}, under {@link FailurePolicy#STEP_DOWN} unless
 * the last argument says {@code EXIT} (then a lost term ends the JVM with {@code EXIT <reason>
 * <sqlstate>}, status 3). A SIGTERM runs {@link LeaderLoop#close()} from a shutdown hook (a
 * graceful stop).
 *
 * <p>With {@code DELAY} as the last argument, the loop turns on the lock-delay after an abnormal
 * loss ({@code takeoverDelay()}: its {@code selfFenceAfter}, 2 s here).
 *
 * <p>Arguments: jdbcUrl user password candidateId key takeover(POLL|WAIT) seed taskMinMs taskMaxMs
 * taskMode(PLAIN|TX|MIXED) refreshTimeoutMs [policy(STEP_DOWN|EXIT) [DELAY]]
 */
public final class FaultCandidate {

  /** Where a fault is to land. */
  enum Phase {
    PRE,
    POST,
    TX,
    BETWEEN,
    CLOSE
  }

  /** What the candidate itself does at the armed phase. */
  enum Action {
    NONE,
    THROW,
    HANG,
    UNLOCK_ALL,
    IDLE,
    /**
     * User code releases the key through a function ({@code retsu_test_release}), then works on.
     */
    UNLOCK_FUNCTION,
    /** User code prepares {@code pg_advisory_unlock}, checks, then executes it, then works on. */
    UNLOCK_PREPARED,
    /** User code releases the key with the function name Unicode-escaped, then works on. */
    UNLOCK_ESCAPED,
    /** User code runs {@code RESET ALL} (clears the bounds, keeps the key), then works on. */
    RESET_ALL,
    /** User code runs {@code RESET ALL} through a function ({@code retsu_test_tidy}), works on. */
    RESET_FUNCTION
  }

  /** One armed phase. */
  record Arm(Phase phase, Action action, long lingerMs) {

    /** The command that arms it: {@code ARM <phase> <action> <lingerMs>}. */
    String command() {
      return "ARM " + phase + " " + action + " " + lingerMs;
    }

    /** Parses {@link #command()}; null when the line is no ARM command. */
    static Arm parse(String line) {
      String[] f = line.split(" ");
      if (f.length != 4 || !f[0].equals("ARM")) {
        return null;
      }
      return new Arm(
          Phase.valueOf(f[1].toUpperCase(Locale.ROOT)),
          Action.valueOf(f[2].toUpperCase(Locale.ROOT)),
          Long.parseLong(f[3]));
    }
  }

  private static final PrintStream OUT = System.out;
  private static final AtomicReference<Arm> TASK_ARM = new AtomicReference<>();
  private static final AtomicReference<Arm> CLOSE_ARM = new AtomicReference<>();

  private FaultCandidate() {}

  static void emit(String event) {
    OUT.println("T " + System.nanoTime() + " " + event);
  }

  /**
   * The command line of a candidate JVM on this JVM's class path.
   *
   * @param arguments the candidate's arguments, as {@link #main} takes them
   * @return the command
   */
  public static List<String> command(String... arguments) {
    return javaCommand(List.of(), FaultCandidate.class, arguments);
  }

  /**
   * The command line of a small child JVM on this JVM's class path.
   *
   * @param options extra JVM options
   * @param main the class to run
   * @param arguments its arguments
   * @return the command
   */
  static List<String> javaCommand(List<String> options, Class<?> main, String... arguments) {
    List<String> jvm = new ArrayList<>(List.of("-Xmx96m", "-XX:TieredStopAtLevel=1"));
    jvm.addAll(options);
    return ChildJvm.javaCommand(jvm, main, List.of(arguments));
  }

  /**
   * The command line of a candidate that polls, runs an instant task and ends its JVM when it loses
   * a term (EXIT): the multi-process tests' candidate.
   *
   * @param jdbcUrl where to connect (may carry the password)
   * @param user the user
   * @param candidateId the candidate id
   * @param key the {@code bigint} key
   * @return the command
   */
  public static List<String> exitingOnLoss(
      String jdbcUrl, String user, String candidateId, long key) {
    return command(
        jdbcUrl,
        user,
        "",
        candidateId,
        Long.toString(key),
        "POLL",
        "1",
        "0",
        "0",
        "PLAIN",
        "1000",
        "EXIT");
  }

  /**
   * A line the candidate printed, without its time stamp.
   *
   * @param line {@code T <nanos> <event>}
   * @return {@code <event>}, or the line as it is if it has no stamp
   */
  public static String event(String line) {
    String[] f = line.split(" ", 3);
    return f.length == 3 && f[0].equals("T") ? f[2] : line;
  }

  /**
   * Runs the candidate.
   *
   * @param args jdbcUrl user password candidateId key takeover seed taskMinMs taskMaxMs taskMode
   *     refreshTimeoutMs [policy [DELAY]]
   */
  public static void main(String[] args) {
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setUrl(args[0]);
    ds.setUser(args[1]);
    if (!args[2].isEmpty()) {
      ds.setPassword(args[2]);
    }
    ds.setConnectTimeout(2);
    Random random = new Random(Long.parseLong(args[6]));
    TimedTask.Profile profile =
        new TimedTask.Profile(Long.parseLong(args[7]), Long.parseLong(args[8]), args[9]);
    LeaderLoopBuilder builder =
        FaultTiming.fast(LeaderLoop.builder(ds, LockKey.of(Long.parseLong(args[4]))));
    if (args.length > 12 && args[12].equals("DELAY")) {
      builder.takeoverDelay();
    }
    LeaderLoop loop =
        builder
            .refreshTimeout(Duration.ofMillis(Long.parseLong(args[10])))
            .candidateId(args[3])
            .takeover(TakeoverMode.valueOf(args[5]))
            .failurePolicy(
                args.length > 11 ? FailurePolicy.valueOf(args[11]) : FailurePolicy.STEP_DOWN)
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
                    Arm arm = reason == LossReason.CLOSED ? CLOSE_ARM.getAndSet(null) : null;
                    if (arm != null) {
                      // Inside close(): the library has not released the lock yet.
                      emit("PHASE CLOSE " + term.number());
                      TimedTask.linger(arm.lingerMs());
                    }
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
                  command(line.trim());
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
      loop.run(ctx -> task(ctx, random, profile));
      emit("STOPPED");
    } catch (LeadershipLostException e) {
      emit("EXIT " + e.reason() + " " + e.sqlState().orElse("-"));
      System.exit(3);
    } catch (RuntimeException e) {
      emit("EXIT " + e.getClass().getSimpleName() + " -");
      System.exit(4);
    }
  }

  private static void command(String line) {
    Arm arm = Arm.parse(line);
    if (arm != null) {
      (arm.phase() == Phase.CLOSE ? CLOSE_ARM : TASK_ARM).set(arm);
      emit("ARMED " + arm.phase() + " " + arm.action());
    } else if (!line.isEmpty()) {
      emit("UNKNOWN-COMMAND " + line.replace(' ', '_'));
    }
  }

  /** One refresh of the leader task: the suite's timed task, with the armed phase if any. */
  private static void task(LeaderContext ctx, Random random, TimedTask.Profile profile)
      throws Exception {
    TimedTask.refresh(ctx, random, profile, TASK_ARM.getAndSet(null), STAMPS);
  }

  /** The candidate's stamps: {@code CHECK|EFFECT <term> <token>}, {@code PHASE <phase> <term>}. */
  private static final TimedTask.Stamps STAMPS =
      new TimedTask.Stamps() {
        @Override
        public void check(LeaderContext ctx) {
          emit("CHECK " + ctx.term().number() + " " + ctx.fencingToken());
        }

        @Override
        public void effect(LeaderContext ctx) {
          emit("EFFECT " + ctx.term().number() + " " + ctx.fencingToken());
        }

        @Override
        public void phase(Phase phase, LeaderContext ctx) {
          emit("PHASE " + phase + " " + ctx.term().number());
        }

        @Override
        public void unlocked(LeaderContext ctx) {
          emit("UNLOCKED " + ctx.term().number());
        }
      };
}
