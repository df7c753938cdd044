package dev.retsu.lock.benchmarks;

import dev.retsu.lock.LeaderGroup;
import java.util.concurrent.CountDownLatch;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * One {@link LeaderGroup} member in its own JVM, for {@link GroupBenchmark}. Prints {@code STARTED
 * <epoch µs>} once {@code start} returned, then {@code HELD <epoch µs> <keys held> <sessions>}
 * whenever the count changes (checked every 20 ms), until it is killed or its stdin closes.
 *
 * <pre>
 * java ... GroupMemberMain jdbcUrl user password group keys memberId sessions
 * </pre>
 */
public final class GroupMemberMain {

  private GroupMemberMain() {}

  /**
   * Runs one member.
   *
   * @param args jdbcUrl, user, password ("-" for none), group name, keys, member id, sessions
   * @throws Exception when the member cannot start
   */
  public static void main(String[] args) throws Exception {
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setUrl(args[0]);
    ds.setUser(args[1]);
    if (!args[2].equals("-")) {
      ds.setPassword(args[2]);
    }
    LeaderGroup group =
        LeaderGroup.partitioned(ds, args[3], Integer.parseInt(args[4]))
            .candidateId(args[5])
            .sessions(Integer.parseInt(args[6]))
            .build();
    CountDownLatch stdinClosed = new CountDownLatch(1);
    Thread watcher =
        new Thread(
            () -> {
              try {
                while (System.in.read() >= 0) {
                  // the parent never writes; EOF means it is gone or wants us to stop
                }
              } catch (java.io.IOException e) {
                // same as EOF
              }
              stdinClosed.countDown();
            },
            "retsu-lock-bench-member-stdin");
    watcher.setDaemon(true);
    group.start(ctx -> {});
    System.out.println("STARTED " + CandidateMain.nowMicros());
    System.out.flush();
    watcher.start();
    int last = -1;
    int lastSessions = -1;
    while (!stdinClosed.await(20, java.util.concurrent.TimeUnit.MILLISECONDS)) {
      int held = group.heldCount();
      int sessions = group.openSessions();
      if (held != last || sessions != lastSessions) {
        System.out.println("HELD " + CandidateMain.nowMicros() + " " + held + " " + sessions);
        System.out.flush();
        last = held;
        lastSessions = sessions;
      }
    }
    group.close();
    System.out.println("CLOSED " + CandidateMain.nowMicros());
    System.out.flush();
  }
}
