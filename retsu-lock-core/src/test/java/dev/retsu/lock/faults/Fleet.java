package dev.retsu.lock.faults;

import static org.awaitility.Awaitility.await;

import dev.retsu.lock.TakeoverMode;
import dev.retsu.lock.testing.FaultProxy;
import dev.retsu.lock.testing.ProcessOutput;
import dev.retsu.lock.testing.TestDatabase;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * Candidates as separate JVMs ({@link FaultCandidate}), each behind its own {@link FaultProxy},
 * with every event they print collected on one time base (System.nanoTime of this machine).
 */
final class Fleet implements AutoCloseable {

  /** One line a candidate printed. */
  record Event(long nanos, String member, String kind, List<String> fields) {}

  /** One candidate process. */
  final class Member {
    final String id;
    final FaultProxy proxy;
    final Process process;
    final List<Event> events = new CopyOnWriteArrayList<>();
    volatile boolean killed;
    volatile boolean paused;
    final Thread reader;

    Member(String id, FaultProxy proxy, Process process) {
      this.id = id;
      this.proxy = proxy;
      this.process = process;
      reader = ProcessOutput.follow(process, "retsu-lock-test-fleet-" + id, this::accept);
    }

    private void accept(String line) {
      String[] parts = line.split(" ");
      if (parts.length >= 3 && parts[0].equals("T")) {
        Event e =
            new Event(
                Long.parseLong(parts[1]), id, parts[2], List.of(parts).subList(3, parts.length));
        events.add(e);
        all.add(e);
      }
    }

    boolean alive() {
      return process.isAlive();
    }

    /** The term this member leads now: its last ACQUIRED has no LOST yet. */
    Optional<Event> openTerm() {
      Event acquired = null;
      for (Event e : events) {
        if (e.kind().equals("ACQUIRED")) {
          acquired = e;
        } else if (e.kind().equals("LOST")
            && acquired != null
            && e.fields().get(0).equals(acquired.fields().get(0))) {
          acquired = null;
        }
      }
      return Optional.ofNullable(acquired);
    }

    void send(String command) {
      try {
        OutputStream in = process.getOutputStream();
        in.write((command + "\n").getBytes(StandardCharsets.UTF_8));
        in.flush();
      } catch (IOException e) {
        throw new UncheckedIOException("cannot command " + id, e);
      }
    }

    int backendPid() {
      return Integer.parseInt(openTerm().orElseThrow().fields().get(2));
    }
  }

  private final TestDatabase db;
  private final long key;
  private final TakeoverMode takeover;
  private final List<Member> members = new CopyOnWriteArrayList<>();
  final List<Event> all = new CopyOnWriteArrayList<>();
  private int launched;

  Fleet(TestDatabase db, long key, TakeoverMode takeover) {
    this.db = db;
    this.key = key;
    this.takeover = takeover;
  }

  Member launch() {
    String id = "c" + (++launched) + "-" + key;
    FaultProxy proxy = FaultProxy.inFrontOf(db.jdbcUrl());
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    ProcessBuilder pb =
        new ProcessBuilder(
            java,
            "-Xmx96m",
            "-XX:TieredStopAtLevel=1",
            "-cp",
            System.getProperty("java.class.path"),
            FaultCandidate.class.getName(),
            proxy.rewrite(db.jdbcUrl()),
            db.user(),
            db.password(),
            id,
            Long.toString(key),
            takeover.name());
    try {
      Files.createDirectories(Path.of("target", "fault-logs"));
      pb.redirectError(Path.of("target", "fault-logs", id + ".log").toFile());
      Member m = new Member(id, proxy, pb.start());
      members.add(m);
      return m;
    } catch (IOException e) {
      proxy.close();
      throw new UncheckedIOException("cannot start candidate " + id, e);
    }
  }

  List<Member> members() {
    return members;
  }

  List<Member> living() {
    return members.stream().filter(m -> m.alive() && !m.killed).collect(Collectors.toList());
  }

  /** The member that leads and has done leader work in its current term. */
  Optional<Member> workingLeader() {
    for (Member m : members) {
      if (!m.alive() || m.paused) {
        continue;
      }
      Optional<Event> term = m.openTerm();
      if (term.isPresent()) {
        String n = term.get().fields().get(0);
        boolean worked =
            m.events.stream()
                .anyMatch(
                    e ->
                        e.kind().equals("WORK")
                            && e.fields().get(0).equals(n)
                            && e.nanos() >= term.get().nanos());
        if (worked) {
          return Optional.of(m);
        }
      }
    }
    return Optional.empty();
  }

  Member awaitWorkingLeader(Duration within) {
    return await().atMost(within).until(this::workingLeader, Optional::isPresent).orElseThrow();
  }

  /**
   * Waits until there is a working leader and every other living candidate is contending: in POLL
   * mode it has made an attempt since it started, in WAIT mode its lock request is queued in {@code
   * pg_locks}. Only then is a takeover measurement about the library, not JVM start-up.
   */
  Member awaitLeaderAndContendingStandbys(Duration within) {
    return await()
        .atMost(within)
        .until(
            () -> {
              Optional<Member> leader = workingLeader();
              if (leader.isEmpty()) {
                return null;
              }
              List<Member> standbys =
                  living().stream()
                      .filter(m -> m != leader.get() && !m.paused)
                      .collect(Collectors.toList());
              if (takeover == TakeoverMode.WAIT) {
                int queued = queuedWaiters();
                return queued >= standbys.size() ? leader.get() : null;
              }
              for (Member m : standbys) {
                if (m.events.stream().noneMatch(e -> e.kind().equals("ATTEMPT"))) {
                  return null;
                }
              }
              return leader.get();
            },
            java.util.Objects::nonNull);
  }

  /**
   * Counts the lock requests queued in {@code pg_locks} for this fleet's key in this database. Only
   * this key: waiters left queued on other keys (earlier scenarios, other tests on the server) must
   * not make a WAIT fleet look ready before its own standbys are queued.
   */
  int queuedWaiters() throws java.sql.SQLException {
    // LockKey.of(long) is pg_advisory_lock(bigint): classid is the high 32 bits, objid the low
    // ones, objsubid 1.
    return db.queryInts(
            "SELECT count(*)::int FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                + " AND database = (SELECT oid FROM pg_database WHERE datname ="
                + " current_database()) AND objsubid = 1"
                + " AND classid = ((?::int8 >> 32) & 4294967295)::oid"
                + " AND objid = (?::int8 & 4294967295)::oid",
            key,
            key)
        .get(0);
  }

  /**
   * Waits for leader work in a term acquired after {@code since}, by anyone, and returns the time
   * of that first work.
   */
  long awaitNewTermWork(long since, Duration within) {
    return await()
        .atMost(within)
        .until(
            () -> {
              List<Event> acquiredAfter =
                  all.stream()
                      .filter(e -> e.kind().equals("ACQUIRED") && e.nanos() > since)
                      .collect(Collectors.toList());
              long first = Long.MAX_VALUE;
              for (Event a : acquiredAfter) {
                for (Event w : all) {
                  if (w.member().equals(a.member())
                      && w.kind().equals("WORK")
                      && w.fields().get(0).equals(a.fields().get(0))
                      && w.nanos() >= a.nanos()) {
                    first = Math.min(first, w.nanos());
                  }
                }
              }
              return first;
            },
            t -> t != Long.MAX_VALUE);
  }

  void kill9(Member m) throws InterruptedException {
    m.killed = true;
    m.process.destroyForcibly();
    m.process.waitFor(10, TimeUnit.SECONDS);
    m.proxy.close();
  }

  void signal(Member m, String signal) {
    try {
      Process p =
          new ProcessBuilder("kill", signal, Long.toString(m.process.pid()))
              .redirectErrorStream(true)
              .start();
      p.waitFor(10, TimeUnit.SECONDS);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Sorted copy of every event so far. */
  List<Event> timeline() {
    List<Event> copy = new ArrayList<>(all);
    copy.sort(Comparator.comparingLong(Event::nanos));
    return copy;
  }

  /** Stops everything; idempotent. */
  @Override
  public void close() {
    try {
      stopAll();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** SIGTERM every living candidate (so each ends its term with a reason), then clean up. */
  void stopAll() throws InterruptedException {
    for (Member m : members) {
      if (m.paused) {
        signal(m, "-CONT");
        m.paused = false;
      }
      if (m.alive()) {
        m.process.toHandle().destroy();
      }
    }
    for (Member m : members) {
      if (!m.process.waitFor(15, TimeUnit.SECONDS)) {
        m.process.destroyForcibly();
        m.killed = true;
      }
      m.reader.join(5000); // the last lines (LOST ... CLOSED) are read before checking
      m.proxy.close();
    }
  }
}
