package dev.retsu.lock.faults;

import static org.awaitility.Awaitility.await;

import dev.retsu.lock.TakeoverMode;
import dev.retsu.lock.testing.FaultProxy;
import dev.retsu.lock.testing.ProcessOutput;
import dev.retsu.lock.testing.TermChecker.Event;
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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * Candidates as separate JVMs ({@link FaultCandidate}), each behind its own {@link FaultProxy},
 * with every event they print collected on one time base (System.nanoTime of this machine).
 */
final class Fleet implements AutoCloseable {

  /** How the candidates' leader tasks behave; see {@link FaultCandidate}. */
  record TaskProfile(long seed, long minMs, long maxMs, String mode, long refreshTimeoutMs) {

    /**
     * The suite's default: each half of a refresh (before and after the check) draws tens to a
     * hundred and fifty milliseconds; {@code retsu.faults.taskMinMs} and {@code
     * retsu.faults.taskMaxMs} override the bounds.
     */
    static TaskProfile of(long seed, String mode) {
      return new TaskProfile(
          seed,
          Long.getLong("retsu.faults.taskMinMs", 10),
          Long.getLong("retsu.faults.taskMaxMs", 150),
          mode,
          FaultTiming.REFRESH_TIMEOUT.toMillis());
    }

    /** The same profile with another refresh timeout, for tasks that idle on purpose. */
    TaskProfile withRefreshTimeout(java.time.Duration timeout) {
      return new TaskProfile(seed, minMs, maxMs, mode, timeout.toMillis());
    }
  }

  /** One candidate process. */
  final class Member {
    final String id;
    final FaultProxy proxy;
    final Process process;
    final List<Event> events = new CopyOnWriteArrayList<>();
    volatile boolean killed;
    volatile boolean paused;

    /** Told to stop (SIGTERM): no longer a candidate the scenario waits for. */
    volatile boolean stopping;

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
      Fleet.send(process, id, command);
    }

    int backendPid() {
      return Integer.parseInt(openTerm().orElseThrow().fields().get(2));
    }

    /** The backend pid of one of this member's terms, ended or not. */
    int backendPid(String term) {
      return events.stream()
          .filter(e -> e.kind().equals("ACQUIRED") && e.fields().get(0).equals(term))
          .map(e -> Integer.parseInt(e.fields().get(2)))
          .reduce((a, b) -> b)
          .orElseThrow();
    }

    /** The first event of a kind this member printed at or after {@code since}. */
    Optional<Event> first(String kind, long since) {
      return events.stream().filter(e -> e.kind().equals(kind) && e.nanos() >= since).findFirst();
    }

    /** Whether the term has ended: its LOST is in, or the process is gone. */
    boolean termEnded(String term) {
      return !alive()
          || events.stream()
              .anyMatch(e -> e.kind().equals("LOST") && e.fields().get(0).equals(term));
    }
  }

  /** Writes one command line to a child process's stdin. */
  static void send(Process process, String who, String command) {
    try {
      OutputStream in = process.getOutputStream();
      in.write((command + "\n").getBytes(StandardCharsets.UTF_8));
      in.flush();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot command " + who, e);
    }
  }

  private final TestDatabase db;
  private final long key;
  private final TakeoverMode takeover;
  private final TaskProfile task;
  private final String user;
  private final String password;

  /** The URL each candidate's fault proxy sits in front of: the server's, or another proxy's. */
  private final String upstreamUrl;

  /** Whether candidates launched from now on turn on the lock-delay ({@code takeoverDelay()}). */
  private volatile boolean lockDelay;

  private final List<Member> members = new CopyOnWriteArrayList<>();
  final List<Event> all = new CopyOnWriteArrayList<>();
  private int launched;
  private volatile int size;

  Fleet(TestDatabase db, long key, TakeoverMode takeover, TaskProfile task) {
    this(db, key, takeover, task, db.user(), db.password());
  }

  /** A fleet whose candidates log in as {@code user}. */
  Fleet(
      TestDatabase db,
      long key,
      TakeoverMode takeover,
      TaskProfile task,
      String user,
      String password) {
    this(db, db.jdbcUrl(), key, takeover, task, user, password);
  }

  /**
   * A fleet whose candidates reach the database through {@code upstreamUrl} (a pooler or proxy in
   * front of the server), each behind its own fault proxy in front of that.
   */
  Fleet(
      TestDatabase db,
      String upstreamUrl,
      long key,
      TakeoverMode takeover,
      TaskProfile task,
      String user,
      String password) {
    this.db = db;
    this.upstreamUrl = upstreamUrl;
    this.key = key;
    this.takeover = takeover;
    this.task = task;
    this.user = user;
    this.password = password;
  }

  /** Candidates launched from now on turn on the lock-delay after an abnormal loss. */
  Fleet withLockDelay() {
    lockDelay = true;
    return this;
  }

  long key() {
    return key;
  }

  TakeoverMode takeover() {
    return takeover;
  }

  /**
   * Starts {@code n} candidates and keeps the fleet at that size: before each round, a candidate
   * that is gone (killed, stopped, or exited on its own) is replaced, as a deployment restarts a
   * dead replica.
   */
  void launch(int n) {
    size = n;
    for (int i = 0; i < n; i++) {
      launch();
    }
  }

  /** Starts replacements until the fleet has its size in living candidates again. */
  private void replenish() {
    for (int i = living().size(); i < size; i++) {
      launch();
    }
  }

  /** Events of candidates that ended on their own (EXIT), e.g. a standby that gave up. */
  List<Event> exits() {
    return all.stream().filter(e -> e.kind().equals("EXIT")).collect(Collectors.toList());
  }

  Member launch() {
    int n = ++launched;
    String id = "c" + n + "-" + key;
    FaultProxy proxy = FaultProxy.inFrontOf(upstreamUrl);
    ProcessBuilder pb =
        new ProcessBuilder(
            FaultCandidate.command(
                proxy.rewrite(upstreamUrl),
                user,
                password,
                id,
                Long.toString(key),
                takeover.name(),
                Long.toString(task.seed() * 31 + n), // each candidate its own task durations
                Long.toString(task.minMs()),
                Long.toString(task.maxMs()),
                task.mode(),
                Long.toString(task.refreshTimeoutMs()),
                "STEP_DOWN",
                lockDelay ? "DELAY" : "-"));
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
    return members.stream()
        .filter(m -> m.alive() && !m.killed && !m.stopping)
        .collect(Collectors.toList());
  }

  /** The member that leads and has passed a leader check in its current term. */
  Optional<Member> workingLeader() {
    for (Member m : members) {
      if (!m.alive() || m.paused || m.stopping) {
        continue;
      }
      Optional<Event> term = m.openTerm();
      if (term.isPresent()) {
        String n = term.get().fields().get(0);
        boolean worked =
            m.events.stream()
                .anyMatch(
                    e ->
                        e.kind().equals("CHECK")
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
              replenish();
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
   * Waits for a passed leader check ({@code CHECK}) in a term acquired after {@code since}, by
   * anyone, and returns the time of that first check: from then on the new leader acts.
   */
  long awaitNewTermCheck(long since, Duration within) {
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
                      && w.kind().equals("CHECK")
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

  /** Waits for an event of a kind that a member prints at or after {@code since}. */
  Event awaitEvent(Member m, String kind, long since, Duration within) {
    return await()
        .atMost(within)
        .until(() -> m.first(kind, since), Optional::isPresent)
        .orElseThrow();
  }

  /**
   * Waits until a term of a member has ended (LOST printed, or the process is gone), so that every
   * check and effect of that term is in the timeline before it is judged.
   */
  void awaitTermEnded(Member m, String term, Duration within) {
    await().atMost(within).until(() -> m.termEnded(term));
  }

  void kill9(Member m) throws InterruptedException {
    m.killed = true;
    // SIGKILL through the process handle: Process.destroyForcibly() also closes our end of the
    // member's output, so the reader could lose the lines it printed before it died
    m.process.toHandle().destroyForcibly();
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

  /**
   * Stops a member's process for {@code pause} (SIGSTOP), then lets it go on (SIGCONT) from a
   * scheduled task: the fault is the pause itself.
   */
  void pause(Member m, Duration pause) {
    signal(m, "-STOP");
    m.paused = true;
    CompletableFuture.delayedExecutor(pause.toMillis(), TimeUnit.MILLISECONDS)
        .execute(
            () -> {
              if (m.paused && m.alive()) {
                signal(m, "-CONT");
              }
              m.paused = false;
            });
  }

  /** A graceful stop: SIGTERM, so the candidate's shutdown hook runs {@code loop.close()}. */
  void sigterm(Member m) {
    m.stopping = true;
    signal(m, "-TERM");
  }

  /**
   * After a round: heals the member's proxy and, when its process was killed or told to stop, waits
   * for it to be gone (the next round's wait for a leader replaces it).
   */
  void settle(Member m, Duration within) {
    m.proxy.heal();
    if (m.killed || m.stopping) {
      await().atMost(within).until(() -> !m.alive());
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

  /**
   * SIGTERM every living candidate (so each ends its term with a reason), then clean up. Standbys
   * stop first and the leader last: a standby taking over from a leader that the test itself is
   * shutting down would judge the test's teardown, not the fault the scenario injected.
   */
  void stopAll() throws InterruptedException {
    for (Member m : members) {
      if (m.paused) {
        signal(m, "-CONT");
        m.paused = false;
      }
    }
    List<Member> standbysFirst = new ArrayList<>(members);
    standbysFirst.sort(Comparator.comparing(m -> m.openTerm().isPresent()));
    for (Member m : standbysFirst) {
      if (m.alive()) {
        m.stopping = true;
        m.process.toHandle().destroy();
        if (!m.process.waitFor(15, TimeUnit.SECONDS)) {
          m.process.destroyForcibly();
          m.killed = true;
        }
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
