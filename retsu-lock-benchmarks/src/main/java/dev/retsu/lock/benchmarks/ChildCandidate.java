package dev.retsu.lock.benchmarks;

import dev.retsu.lock.testing.FaultProxy;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * The parent's view of one candidate JVM ({@link CandidateMain}): its process, the fault proxy its
 * connections go through, and the events it printed. Thread-safe.
 */
final class ChildCandidate implements AutoCloseable {

  /** One line a child printed; {@code micros} is the child's wall clock in epoch microseconds. */
  record Event(String type, long micros, String detail) {}

  /** One term as the child reported it; {@code end} is Long.MAX_VALUE while it lasts. */
  record TermSpan(long start, long firstRefresh, long end) {}

  final String id;
  final CandidateSpec spec;
  final FaultProxy proxy;
  final Process process;
  private final List<Event> events = new CopyOnWriteArrayList<>();
  private volatile long deathMicros = Long.MAX_VALUE;

  private ChildCandidate(String id, CandidateSpec spec, FaultProxy proxy, Process process) {
    this.id = id;
    this.spec = spec;
    this.proxy = proxy;
    this.process = process;
    Thread reader = new Thread(this::read, "retsu-lock-bench-reader-" + id);
    reader.setDaemon(true);
    reader.start();
  }

  /**
   * Starts a candidate JVM whose connections go through a new fault proxy.
   *
   * @param template settings; url, id and key are filled in here
   * @param directUrl the server's JDBC URL
   * @param user the database user
   * @param id candidate id
   * @param key the lock key
   * @param logDir where the child's stderr goes
   */
  static ChildCandidate launch(
      CandidateSpec template, String directUrl, String user, String id, long key, Path logDir)
      throws IOException {
    return launch(template, directUrl, user, id, key, logDir, false);
  }

  /**
   * Starts a candidate JVM as {@link #launch(CandidateSpec, String, String, String, long, Path)},
   * with {@code traceClassLoad} writing every class its JVM loads, stamped with its monotonic
   * clock, to {@link #classLoadLog(Path, String)}.
   */
  static ChildCandidate launch(
      CandidateSpec template,
      String directUrl,
      String user,
      String id,
      long key,
      Path logDir,
      boolean traceClassLoad)
      throws IOException {
    FaultProxy proxy = FaultProxy.inFrontOf(directUrl);
    try {
      CandidateSpec spec = template.withConnection(proxy.rewrite(directUrl), user, id, key);
      List<String> command = new ArrayList<>();
      command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
      command.add("-Xmx128m");
      command.add("-XX:+UseSerialGC");
      command.add("-XX:TieredStopAtLevel=1");
      command.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=info");
      command.add("-Dorg.slf4j.simpleLogger.showDateTime=true");
      if (traceClassLoad) {
        command.add(
            "-Xlog:class+load=info:file="
                + classLoadLog(logDir, id).toAbsolutePath()
                + ":timenanos");
      }
      command.add("-cp");
      command.add(System.getProperty("java.class.path"));
      command.add(CandidateMain.class.getName());
      command.addAll(spec.toArgs());
      ProcessBuilder pb = new ProcessBuilder(command);
      pb.redirectError(ProcessBuilder.Redirect.appendTo(logDir.resolve(id + ".log").toFile()));
      return new ChildCandidate(id, spec, proxy, pb.start());
    } catch (IOException | RuntimeException e) {
      proxy.close();
      throw e;
    }
  }

  /** Where a traced child's class loads go. */
  static Path classLoadLog(Path logDir, String id) {
    return logDir.resolve(id + ".classes");
  }

  private void read() {
    try (BufferedReader r =
        new BufferedReader(
            new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      while ((line = r.readLine()) != null) {
        String[] parts = line.split(" ", 3);
        if (parts.length >= 2) {
          try {
            events.add(
                new Event(parts[0], Long.parseLong(parts[1]), parts.length > 2 ? parts[2] : ""));
          } catch (NumberFormatException e) {
            // not a protocol line (e.g. a library printing to stdout): ignore
          }
        }
      }
    } catch (IOException e) {
      events.add(new Event("READ-ERROR", CandidateMain.nowMicros(), e.toString()));
    }
  }

  List<Event> events() {
    return List.copyOf(events);
  }

  boolean ready() {
    return events.stream().anyMatch(e -> e.type().equals("READY"));
  }

  boolean alive() {
    return process.isAlive();
  }

  /** Returns the terms this child reported, in order. */
  List<TermSpan> terms() {
    List<TermSpan> terms = new ArrayList<>();
    long start = -1;
    long refresh = -1;
    for (Event e : events) {
      switch (e.type()) {
        case "ACQUIRED" -> {
          if (start >= 0) {
            terms.add(new TermSpan(start, refresh, e.micros()));
          }
          start = e.micros();
          refresh = -1;
        }
        case "REFRESH" -> {
          if (start >= 0 && refresh < 0) {
            refresh = e.micros();
          }
        }
        case "LOST", "EXIT" -> {
          if (start >= 0) {
            terms.add(new TermSpan(start, refresh, e.micros()));
            start = -1;
          }
        }
        default -> {
          // READY and others
        }
      }
    }
    if (start >= 0) {
      terms.add(new TermSpan(start, refresh, Math.min(deathMicros, openEnd())));
    }
    return terms;
  }

  private long openEnd() {
    return process.isAlive() ? Long.MAX_VALUE : exitSeenMicros;
  }

  private volatile long exitSeenMicros = Long.MAX_VALUE;

  /** Returns whether this child leads now: a term without an end that has refreshed. */
  boolean leading() {
    if (!process.isAlive()) {
      return false;
    }
    List<TermSpan> t = terms();
    return !t.isEmpty()
        && t.get(t.size() - 1).end() == Long.MAX_VALUE
        && t.get(t.size() - 1).firstRefresh() >= 0;
  }

  /** Returns the backend pid of the current retsu term, or -1. */
  int leaderBackendPid() {
    for (int i = events.size() - 1; i >= 0; i--) {
      Event e = events.get(i);
      if (e.type().equals("ACQUIRED")) {
        try {
          return Integer.parseInt(e.detail().trim());
        } catch (NumberFormatException notRetsu) {
          return -1;
        }
      }
    }
    return -1;
  }

  /** Sends SIGTERM through the handle, so our end of its stdout stays open. */
  void terminate() {
    process.toHandle().destroy();
  }

  /** Sends SIGSTOP: the process freezes, its kernel still answers the server's keepalives. */
  void pause() throws IOException, InterruptedException {
    signal("STOP");
  }

  /** Sends SIGCONT to a paused process. */
  void resume() throws IOException, InterruptedException {
    if (process.isAlive()) {
      signal("CONT");
    }
  }

  private void signal(String name) throws IOException, InterruptedException {
    Process kill =
        new ProcessBuilder("kill", "-" + name, Long.toString(process.pid()))
            .redirectErrorStream(true)
            .start();
    if (kill.waitFor() != 0) {
      throw new IOException("kill -" + name + " " + process.pid() + " failed");
    }
  }

  /** Sends SIGKILL; the term (if any) ends now as far as the parent is concerned. */
  void kill() {
    if (process.isAlive()) {
      deathMicros = Math.min(deathMicros, CandidateMain.nowMicros());
      process.destroyForcibly();
    }
  }

  boolean awaitExit(long millis) throws InterruptedException {
    boolean exited = process.waitFor(millis, TimeUnit.MILLISECONDS);
    if (exited) {
      exitSeenMicros = Math.min(exitSeenMicros, CandidateMain.nowMicros());
    }
    return exited;
  }

  @Override
  public void close() {
    kill();
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        System.err.println("candidate " + id + " did not die within 10 s of SIGKILL");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      proxy.close();
    }
  }
}
