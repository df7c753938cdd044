package dev.retsu.lock.ha;

import dev.retsu.lock.testing.ChildJvm;
import dev.retsu.lock.testing.ProcessOutput;
import dev.retsu.lock.testing.TermChecker.Event;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * Candidate JVMs ({@link HaCandidate}) and every event they print, on one time base. Not
 * thread-safe for launching; events are collected on reader threads.
 */
public final class HaFleet implements AutoCloseable {

  /** One candidate process. */
  public final class Member {
    /** Its candidate id. */
    public final String id;

    /** Where it takes the lock. */
    public final String lockUrl;

    final Process process;
    final Thread reader;

    /** Its events, in arrival order. */
    public final List<Event> events = new CopyOnWriteArrayList<>();

    Member(String id, String lockUrl, Process process) {
      this.id = id;
      this.lockUrl = lockUrl;
      this.process = process;
      this.reader = ProcessOutput.follow(process, "retsu-lock-ha-reader-" + id, this::accept);
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

    /**
     * Whether its process lives.
     *
     * @return true while it runs
     */
    public boolean alive() {
      return process.isAlive();
    }

    /**
     * Its open term: the last ACQUIRED without a LOST.
     *
     * @return the ACQUIRED event
     */
    public Optional<Event> openTerm() {
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

    /**
     * Whether it printed an event of a kind at or after a time.
     *
     * @param kind the kind
     * @param since the time
     * @return true if so
     */
    public boolean printed(String kind, long since) {
      return events.stream().anyMatch(e -> e.kind().equals(kind) && e.nanos() >= since);
    }

    /** A graceful stop: SIGTERM (its shutdown hook closes the loop). */
    public void stop() {
      process.toHandle().destroy();
    }

    @Override
    public String toString() {
      return id;
    }
  }

  private final Path logs;
  private final String fenceUrl;
  private final long key;
  private final List<Member> members = new CopyOnWriteArrayList<>();

  /** Every event of every member, in arrival order. */
  public final List<Event> all = new CopyOnWriteArrayList<>();

  private int launched;

  /**
   * A fleet.
   *
   * @param logs where each candidate's standard error goes
   * @param fenceUrl the fence's URL (the primary endpoint)
   * @param key the lock key
   */
  public HaFleet(Path logs, String fenceUrl, long key) {
    this.logs = logs;
    this.fenceUrl = fenceUrl;
    this.key = key;
  }

  /**
   * Starts a candidate.
   *
   * @param prefix its id's prefix ({@code c}, {@code probe})
   * @param lockUrl where it takes the lock
   * @return the member
   */
  public Member launch(String prefix, String lockUrl) {
    int n = ++launched;
    String id = prefix + n;
    List<String> command =
        ChildJvm.javaCommand(
            List.of(
                "-Xmx96m",
                "-XX:TieredStopAtLevel=1",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=info"),
            HaCandidate.class,
            List.of(id, lockUrl, fenceUrl, Long.toString(key), Long.toString(key * 31 + n)));
    ProcessBuilder pb = new ProcessBuilder(command);
    try {
      Files.createDirectories(logs);
      pb.redirectError(ProcessBuilder.Redirect.appendTo(logs.resolve(id + ".log").toFile()));
      Member m = new Member(id, lockUrl, pb.start());
      members.add(m);
      return m;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start candidate " + id, e);
    }
  }

  /**
   * The members.
   *
   * @return every member launched
   */
  public List<Member> members() {
    return List.copyOf(members);
  }

  /**
   * The member that leads and has passed a check in its open term.
   *
   * @param among the members to look at
   * @return the member and its ACQUIRED event
   */
  public static Optional<Member> workingLeader(List<Member> among) {
    for (Member m : among) {
      if (!m.alive()) {
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

  /**
   * Sorted copy of every event so far.
   *
   * @return the timeline
   */
  public List<Event> timeline() {
    List<Event> copy = new ArrayList<>(all);
    copy.sort(Comparator.comparingLong(Event::nanos));
    return copy;
  }

  /**
   * Stops every living member (standbys first, then leaders, so that no standby takes over from a
   * leader the test itself stops), waits for their last lines, kills what does not stop.
   *
   * @param within how long each may take
   * @return the members that had to be killed (their last term may lack a LOST)
   */
  public List<String> stopAll(Duration within) {
    List<Member> order = new ArrayList<>(members);
    order.sort(Comparator.comparing(m -> m.openTerm().isPresent()));
    List<String> killed = new ArrayList<>();
    for (Member m : order) {
      if (m.alive()) {
        m.stop();
        try {
          if (!m.process.waitFor(within.toMillis(), TimeUnit.MILLISECONDS)) {
            m.process.destroyForcibly();
            killed.add(m.id);
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }
    for (Member m : members) {
      try {
        m.process.waitFor(within.toMillis(), TimeUnit.MILLISECONDS);
        m.reader.join(5000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    return killed;
  }

  /** Kills anything still running. Idempotent. */
  @Override
  public void close() {
    for (Member m : members) {
      if (m.alive()) {
        m.process.destroyForcibly();
      }
    }
  }
}
