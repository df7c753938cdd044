package dev.retsu.lock.faults;

import dev.retsu.lock.LeaderGroup;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A {@code LeaderGroup} member in its own JVM for the fault suite's group scenarios. Prints one
 * line per event, {@code T <CLOCK_MONOTONIC ns> <kind> <key> <fields...>} (ACQUIRED term token,
 * CHECK term, EFFECT term, LOST term reason), and {@code HELD <n>} when the count changes; stops
 * gracefully when its stdin closes. Same machine, same monotonic clock as the parent.
 *
 * <pre>
 * java ... GroupFaultMember jdbcUrl user password group firstKey keys memberId
 * </pre>
 */
public final class GroupFaultMember {

  private static final PrintStream OUT = new PrintStream(System.out, true, StandardCharsets.UTF_8);

  private GroupFaultMember() {}

  private static synchronized void print(String line) {
    OUT.println(line);
  }

  private static void event(String kind, LockKey key, String... fields) {
    print(
        "T " + System.nanoTime() + " " + kind + " " + key.value() + " " + String.join(" ", fields));
  }

  /**
   * Runs one member.
   *
   * @param args jdbcUrl, user, password ("-" for none), group, first key, key count, member id
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
    LeaderGroup group =
        LeaderGroup.builder(ds, args[3], keys)
            .candidateId(args[6])
            .membershipInterval(Duration.ofMillis(250))
            .refreshInterval(Duration.ofMillis(100))
            .heartbeatInterval(Duration.ofMillis(200))
            .reconnectInterval(Duration.ofMillis(200))
            .listener(
                new LeaderListener() {
                  @Override
                  public void onAcquired(Term t) {
                    event(
                        "ACQUIRED",
                        t.key(),
                        Long.toString(t.number()),
                        t.fencingToken().toString());
                  }

                  @Override
                  public void onLost(Term t, LossReason reason, Throwable cause) {
                    event("LOST", t.key(), Long.toString(t.number()), reason.name());
                  }
                })
            .build();
    group.start(
        ctx -> {
          ctx.ensureLeader();
          event("CHECK", ctx.term().key(), Long.toString(ctx.term().number()));
          ctx.withConnection(
              c -> {
                try (Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery("SELECT 1")) {
                  return rs.next();
                }
              });
          ctx.ensureLeader();
          event("CHECK", ctx.term().key(), Long.toString(ctx.term().number()));
          event("EFFECT", ctx.term().key(), Long.toString(ctx.term().number()));
        });
    Thread stdin =
        new Thread(
            () -> {
              try {
                while (System.in.read() >= 0) {
                  // EOF means stop
                }
              } catch (java.io.IOException e) {
                // same as EOF
              }
              group.close();
              print("CLOSED");
              System.exit(0);
            },
            "retsu-lock-test-group-member-stdin");
    stdin.setDaemon(false);
    stdin.start();
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
