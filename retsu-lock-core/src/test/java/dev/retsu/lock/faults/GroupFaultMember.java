package dev.retsu.lock.faults;

import dev.retsu.lock.LeaderGroup;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.faults.FaultCandidate.Arm;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A {@code LeaderGroup} member in its own JVM for the fault suite's group scenarios: the fast
 * bounds of {@link FaultTiming}, the suite's {@link TimedTask} per key, every event printed by a
 * {@link GroupRecorder} as {@code T <CLOCK_MONOTONIC ns> <kind> <key> <fields...>} (same machine,
 * same monotonic clock as the parent), and {@code HELD <n>} when its count changes.
 *
 * <p>Commands on stdin: {@code ARM <phase> <action> <lingerMs>} arms a phase (PRE, POST, TX,
 * BETWEEN: the next task of any key; CLOSE: inside {@code close()}) and prints {@code ARMED};
 * {@code CLOSE}, or the end of stdin, closes the group gracefully, prints {@code CLOSED} and exits.
 *
 * <pre>
 * java ... GroupFaultMember jdbcUrl user password group firstKey keys memberId seed taskMinMs
 *     taskMaxMs taskMode
 * </pre>
 */
public final class GroupFaultMember {

  private static final PrintStream OUT = new PrintStream(System.out, true, StandardCharsets.UTF_8);

  private GroupFaultMember() {}

  private static void print(String line) {
    synchronized (OUT) {
      OUT.println(line);
    }
  }

  /**
   * The command line of a member on this JVM's class path.
   *
   * @param arguments the member's arguments, as {@link #main} takes them
   * @return the command
   */
  static List<String> command(String... arguments) {
    return FaultCandidate.javaCommand(
        List.of("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"),
        GroupFaultMember.class,
        arguments);
  }

  /**
   * Runs one member.
   *
   * @param args jdbcUrl, user, password ("-" for none), group, first key, key count, member id,
   *     seed, task min ms, task max ms, task mode
   * @throws Exception when it cannot start
   */
  public static void main(String[] args) throws Exception {
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setUrl(args[0]);
    ds.setUser(args[1]);
    if (!args[2].equals("-")) {
      ds.setPassword(args[2]);
    }
    long first = Long.parseLong(args[4]);
    List<LockKey> keys = new ArrayList<>();
    for (int i = 0; i < Integer.parseInt(args[5]); i++) {
      keys.add(LockKey.of(first + i));
    }
    String id = args[6];
    GroupRecorder rec = GroupRecorder.printingTo(OUT);
    LeaderGroup group =
        FaultTiming.fast(LeaderGroup.builder(ds, args[3], keys))
            .candidateId(id)
            .listener(rec.listener(id))
            .build();
    group.start(
        rec.timedTask(
            id,
            new Random(Long.parseLong(args[7])),
            new TimedTask.Profile(Long.parseLong(args[8]), Long.parseLong(args[9]), args[10])));
    Thread commands =
        new Thread(
            () -> {
              try (BufferedReader in =
                  new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null && !line.trim().equals("CLOSE")) {
                  Arm arm = Arm.parse(line.trim());
                  if (arm != null) {
                    rec.arm(id, arm);
                    print("ARMED " + arm.phase());
                  } else if (!line.isBlank()) {
                    print("UNKNOWN-COMMAND " + line.trim().replace(' ', '_'));
                  }
                }
              } catch (java.io.IOException e) {
                // the parent is gone: same as CLOSE
              }
              rec.closing(id);
              group.close();
              print("CLOSED");
              System.exit(0);
            },
            "retsu-lock-test-group-member-commands");
    commands.setDaemon(false);
    commands.start();
    int last = -1;
    while (true) {
      int held = group.heldCount();
      if (held != last) {
        print("HELD " + held);
        last = held;
      }
      Thread.sleep(20); // a reporting cadence in a child process, not a wait for a condition
    }
  }
}
