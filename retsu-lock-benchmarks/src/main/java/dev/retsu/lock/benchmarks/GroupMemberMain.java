package dev.retsu.lock.benchmarks;

import dev.retsu.lock.LeaderGroup;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.locks.ReentrantLock;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * One {@link LeaderGroup} member in its own JVM, for {@link GroupBenchmark}. Prints {@code STARTED
 * <epoch µs>} once {@code start} returned, then {@code HELD <epoch µs> <keys held> <sessions>
 * <terms ended>} whenever one of them changes (checked every 20 ms), until it is killed or its
 * stdin closes.
 *
 * <p>Each key's terms go to an events file, one line per event stamped with {@code
 * System.nanoTime()} (CLOCK_MONOTONIC on Linux: one clock for every process of the machine, so the
 * parent can merge the members' files into one timeline per key): {@code A <ns> <key> <term>
 * <token>} when a term starts, {@code C <ns> <key> <term>} when the task passed {@code
 * ensureLeader()}, {@code L <ns> <key> <term> <reason>} when it ends. Each line is one unbuffered
 * write, so what a member wrote before a {@code kill -9} is in the file.
 *
 * <pre>
 * java ... GroupMemberMain jdbcUrl user password group keys memberId sessions eventsFile
 * </pre>
 */
public final class GroupMemberMain {

  private GroupMemberMain() {}

  /** The events file: one write per line, from the session workers of every key. */
  private static final class Events implements LeaderListener {
    private final OutputStream out;
    private final ReentrantLock lock = new ReentrantLock();

    Events(String file) throws IOException {
      this.out = new FileOutputStream(file, true);
    }

    void write(char kind, Term t, String last) {
      StringBuilder line = new StringBuilder(48);
      line.append(kind)
          .append(' ')
          .append(System.nanoTime())
          .append(' ')
          .append(t.key().value())
          .append(' ')
          .append(t.number());
      if (last != null) {
        line.append(' ').append(last);
      }
      byte[] bytes = line.append('\n').toString().getBytes(StandardCharsets.US_ASCII);
      lock.lock();
      try {
        out.write(bytes);
      } catch (IOException e) {
        throw new UncheckedIOException("cannot write the events file", e);
      } finally {
        lock.unlock();
      }
    }

    @Override
    public void onAcquired(Term t) {
      write('A', t, t.fencingToken().toString());
    }

    @Override
    public void onLost(Term t, LossReason reason, Throwable cause) {
      write('L', t, reason.name());
    }
  }

  /**
   * Runs one member.
   *
   * @param args jdbcUrl, user, password ("-" for none), group name, keys, member id, sessions,
   *     events file
   * @throws Exception when the member cannot start
   */
  public static void main(String[] args) throws Exception {
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setUrl(args[0]);
    ds.setUser(args[1]);
    if (!args[2].equals("-")) {
      ds.setPassword(args[2]);
    }
    Events events = new Events(args[7]);
    LeaderGroup group =
        LeaderGroup.partitioned(ds, args[3], Integer.parseInt(args[4]))
            .candidateId(args[5])
            .sessions(Integer.parseInt(args[6]))
            .listener(events)
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
    group.start(
        ctx -> {
          ctx.ensureLeader(); // no statement: a look at the session's socket
          events.write('C', ctx.term(), null);
        });
    System.out.println("STARTED " + CandidateMain.nowMicros());
    System.out.flush();
    watcher.start();
    int last = -1;
    int lastSessions = -1;
    long lastLosses = -1;
    while (!stdinClosed.await(20, java.util.concurrent.TimeUnit.MILLISECONDS)) {
      int held = group.heldCount();
      int sessions = group.openSessions();
      long losses = group.losses();
      if (held != last || sessions != lastSessions || losses != lastLosses) {
        System.out.println(
            "HELD " + CandidateMain.nowMicros() + " " + held + " " + sessions + " " + losses);
        System.out.flush();
        last = held;
        lastSessions = sessions;
        lastLosses = losses;
      }
    }
    group.close();
    System.out.println("CLOSED " + CandidateMain.nowMicros());
    System.out.flush();
  }
}
