package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.fakes.TermEvents;
import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.fakes.TestLoops;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The measurement program of docs/BENCHMARKS.md "Leadership as a shared fact": watch latency for
 * graceful changes and crashes, hand-over time on yield and to a preferred candidate, the takeover
 * cost of the lock-delay and of the {@code released} notice, with raw round trips as the baseline
 * measured in the same run. Not part of the default build: {@code ./mvnw -B -ntp -pl
 * retsu-lock-core -Pmeasure-leadership verify -Dit.test=LeadershipMeasurementIntegrationTest
 * -DskipUTs} ({@code retsu.measure.reps}, default 40). It writes {@code
 * target/measurements/leadership.md} with the commit and the load, and asserts only that every
 * figure was produced.
 */
@ExtendWith(PostgresExtension.class)
class LeadershipMeasurementIntegrationTest {

  private static final Duration WITHIN = Duration.ofSeconds(30);
  private final int reps = Integer.getInteger("retsu.measure.reps", 40);
  private final List<String> rows = new ArrayList<>();

  @Test
  void measure(TestDatabase db) throws Exception {
    String loadBefore = load();
    baseline(db);
    watchGraceful(db);
    watchCrash(db);
    yieldHandOver(db);
    preferredHandOver(db);
    lockDelayCost(db);
    String loadAfter = load();
    StringBuilder md = new StringBuilder();
    md.append("commit ")
        .append(commit())
        .append(", ")
        .append(Instant.now())
        .append(", load average ")
        .append(loadBefore)
        .append(" at start, ")
        .append(loadAfter)
        .append(" at the end, ")
        .append(Runtime.getRuntime().availableProcessors())
        .append(" cores, ")
        .append(reps)
        .append(
            " reps\n\n| measurement | n | p50 (ms) | p90 (ms) | max (ms) |\n| --- | --- | --- | --- | --- |\n");
    rows.forEach(r -> md.append(r).append('\n'));
    Path out = Path.of("target", "measurements", "leadership.md");
    Files.createDirectories(out.getParent());
    Files.writeString(out, md.toString(), StandardCharsets.UTF_8);
    System.out.println(md);
    assertThat(rows).hasSize(11);
  }

  private void row(String what, List<Long> nanos) {
    assertThat(nanos).as(what).isNotEmpty();
    List<Long> s = new ArrayList<>(nanos);
    Collections.sort(s);
    rows.add(
        "| "
            + what
            + " | "
            + s.size()
            + " | "
            + ms(s.get((s.size() - 1) / 2))
            + " | "
            + ms(s.get((int) Math.ceil(s.size() * 0.9) - 1))
            + " | "
            + ms(s.get(s.size() - 1))
            + " |");
  }

  private static String ms(long nanos) {
    return String.format(java.util.Locale.ROOT, "%.2f", nanos / 1e6);
  }

  private void baseline(TestDatabase db) throws Exception {
    List<Long> select = new ArrayList<>();
    List<Long> notify = new ArrayList<>();
    try (Connection c = db.connect();
        Statement s = c.createStatement()) {
      for (int i = 0; i < reps * 5; i++) {
        select.add(time(() -> query(s, "SELECT 1")));
        notify.add(time(() -> query(s, "SELECT pg_notify('retsu_lock_measure', 'x')::text")));
      }
    }
    row("baseline: `SELECT 1` round trip on a plain connection", select);
    row("baseline: one `pg_notify` statement (what the `released` notice adds)", notify);
  }

  private static long query(Statement s, String sql) {
    try (ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return 0;
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private static long time(LongSupplier work) {
    long start = System.nanoTime();
    work.getAsLong();
    return System.nanoTime() - start;
  }

  private LeaderLoop loop(TestDatabase db, LockKey key, TermEvents e, TakeoverMode mode) {
    return TestLoops.fast(LeaderLoop.builder(db.dataSource(), key))
        .candidateId(e.member)
        .refreshInterval(Duration.ofMillis(50))
        .takeover(mode)
        .listener(e)
        .build();
  }

  /** A watcher's ACQUIRED after the new leader's onAcquired, for a graceful WAIT hand-over. */
  private void watchGraceful(TestDatabase db) {
    List<Long> acquired = new ArrayList<>();
    List<Long> released = new ArrayList<>();
    try (LeaderWatch w = LeaderWatch.open(db.dataSource())) {
      for (int i = 0; i < reps; i++) {
        LockKey key = TestKeys.next();
        List<long[]> seen = new CopyOnWriteArrayList<>();
        w.watch(key, c -> seen.add(new long[] {System.nanoTime(), c.cause().ordinal()}));
        await().atMost(WITHIN).until(() -> seen.size() == 1); // the first read: nobody
        TermEvents a = new TermEvents("wg-a");
        TermEvents b = new TermEvents("wg-b");
        LeaderLoop la = loop(db, key, a, TakeoverMode.WAIT);
        LeaderLoop lb = loop(db, key, b, TakeoverMode.WAIT);
        try {
          la.start(a.task());
          await().atMost(WITHIN).until(la::isLeader);
          lb.start(b.task());
          await().atMost(WITHIN).until(() -> db.clientSessions("retsu-lock:wg-b") == 1);
          long closed = System.nanoTime();
          la.close();
          await().atMost(WITHIN).until(() -> seen.size() >= 4);
          long onAcquired = b.first("ACQUIRED", closed);
          released.add(at(seen, LeaderChange.Cause.RELEASED) - closed);
          acquired.add(at(seen, LeaderChange.Cause.ACQUIRED, 2) - onAcquired);
        } finally {
          la.close();
          lb.close();
        }
      }
    }
    row("watch: `RELEASED` seen after the old leader's `close()` began", released);
    row("watch: `ACQUIRED` seen after the new leader's `onAcquired` (negative: before)", acquired);
  }

  private static long at(List<long[]> seen, LeaderChange.Cause cause) {
    return at(seen, cause, 1);
  }

  private static long at(List<long[]> seen, LeaderChange.Cause cause, int nth) {
    int n = 0;
    for (long[] s : seen) {
      if (s[1] == cause.ordinal() && ++n == nth) {
        return s[0];
      }
    }
    throw new IllegalStateException("no " + cause + " #" + nth + " in " + seen.size());
  }

  /** A watcher's ENDED after pg_terminate_backend of a leader nobody succeeds. */
  private void watchCrash(TestDatabase db) throws Exception {
    List<Long> ended = new ArrayList<>();
    try (LeaderWatch w = LeaderWatch.open(db.dataSource())) {
      for (int i = 0; i < Math.max(5, reps / 4); i++) {
        LockKey key = TestKeys.next();
        List<long[]> seen = new CopyOnWriteArrayList<>();
        w.watch(key, c -> seen.add(new long[] {System.nanoTime(), c.cause().ordinal()}));
        await().atMost(WITHIN).until(() -> seen.size() == 1); // the first read: nobody
        TermEvents a = new TermEvents("wc-a");
        try (LeaderLoop la =
            TestLoops.fast(LeaderLoop.builder(db.dataSource(), key))
                .candidateId("wc-a")
                .retryInterval(Duration.ofSeconds(30))
                .maxBackoff(Duration.ofSeconds(30))
                .listener(a)
                .build()) {
          la.start(a.task());
          await().atMost(WITHIN).until(() -> seen.size() >= 2);
          long terminated = System.nanoTime();
          db.terminateBackend(la.currentTerm().orElseThrow().backendPid());
          await().atMost(WITHIN).until(() -> seen.size() >= 3);
          ended.add(at(seen, LeaderChange.Cause.ENDED) - terminated);
        }
      }
    }
    row("watch: `ENDED` seen after `pg_terminate_backend` (check every 500 ms)", ended);
  }

  /** The old leader's last EFFECT to the new leader's first CHECK, on yield. */
  private void yieldHandOver(TestDatabase db) {
    List<Long> gaps = new ArrayList<>();
    List<Long> fromYield = new ArrayList<>();
    for (int i = 0; i < reps; i++) {
      LockKey key = TestKeys.next();
      TermEvents a = new TermEvents("y-a");
      TermEvents b = new TermEvents("y-b");
      try (LeaderLoop la = loop(db, key, a, TakeoverMode.WAIT);
          LeaderLoop lb = loop(db, key, b, TakeoverMode.WAIT)) {
        la.start(a.task());
        await().atMost(WITHIN).until(la::isLeader);
        lb.start(b.task());
        await().atMost(WITHIN).until(() -> db.clientSessions("retsu-lock:y-b") == 1);
        long before = System.nanoTime();
        la.yield(Duration.ofSeconds(30));
        await().atMost(WITHIN).until(() -> b.first("CHECK", before) > 0);
        gaps.add(b.first("CHECK", before) - a.last("EFFECT"));
        // The old leader's work has stopped once yield() is called (its last work was before, at
        // most one refreshInterval, here 50 ms, earlier): the hand-over proper.
        fromYield.add(b.first("CHECK", before) - Math.max(before, a.last("EFFECT")));
      }
    }
    assertThat(gaps)
        .as("acting overlap on yield: a new first check before the last effect")
        .allMatch(g -> g > 0);
    row("hand-over on `yield`: old leader's last work to new leader's first work", gaps);
    row("hand-over on `yield`: the `yield()` call to new leader's first work", fromYield);
  }

  /** The same gap when a preferred WAIT standby arrives and the leader yields at its refresh. */
  private void preferredHandOver(TestDatabase db) {
    List<Long> gaps = new ArrayList<>();
    List<Long> fromStop = new ArrayList<>();
    for (int i = 0; i < reps; i++) {
      LockKey key = TestKeys.next();
      TermEvents a = new TermEvents("p-a");
      TermEvents b = new TermEvents("p-b");
      try (LeaderLoop la = loop(db, key, a, TakeoverMode.POLL);
          LeaderLoop lb =
              TestLoops.fast(LeaderLoop.builder(db.dataSource(), key))
                  .candidateId("p-b")
                  .refreshInterval(Duration.ofMillis(50))
                  .preferred(true)
                  .listener(b)
                  .build()) {
        la.start(a.task());
        await().atMost(WITHIN).until(la::isLeader);
        long before = System.nanoTime();
        lb.start(b.task());
        await().atMost(WITHIN).until(() -> b.first("CHECK", before) > 0);
        gaps.add(b.first("CHECK", before) - a.last("EFFECT"));
        // The old leader stops at the refresh that finds the preferred standby waiting; its
        // onLost(YIELDED) comes right after, before the release.
        fromStop.add(b.first("CHECK", before) - a.first("LOST", before));
      }
    }
    assertThat(gaps)
        .as("acting overlap on hand-over: a new first check before the last effect")
        .allMatch(g -> g > 0);
    row("hand-over to a preferred candidate: old leader's last work to new first work", gaps);
    row(
        "hand-over to a preferred candidate: old leader's stop (onLost) to new first work",
        fromStop);
  }

  /** Graceful WAIT takeover with and without the lock-delay (which then does not wait). */
  private void lockDelayCost(TestDatabase db) {
    for (boolean delay : new boolean[] {false, true}) {
      List<Long> gaps = new ArrayList<>();
      for (int i = 0; i < reps; i++) {
        LockKey key = TestKeys.next();
        TermEvents a = new TermEvents("d-a");
        TermEvents b = new TermEvents("d-b");
        LeaderLoopBuilder bb =
            TestLoops.fast(LeaderLoop.builder(db.dataSource(), key))
                .candidateId("d-b")
                .refreshInterval(Duration.ofMillis(50))
                .takeover(TakeoverMode.WAIT)
                .listener(b);
        if (delay) {
          bb.takeoverDelay(Duration.ofSeconds(5));
        }
        LeaderLoop la = loop(db, key, a, TakeoverMode.WAIT);
        LeaderLoop lb = bb.build();
        try {
          la.start(a.task());
          await().atMost(WITHIN).until(la::isLeader);
          lb.start(b.task());
          await().atMost(WITHIN).until(() -> db.clientSessions("retsu-lock:d-b") == 1);
          long before = System.nanoTime();
          la.close();
          await().atMost(WITHIN).until(() -> b.first("CHECK", before) > 0);
          gaps.add(b.first("CHECK", before) - a.last("EFFECT"));
        } finally {
          la.close();
          lb.close();
        }
      }
      row(
          "graceful WAIT takeover (close), last work to first work, "
              + (delay ? "`takeoverDelay(5 s)` on (not waited: graceful)" : "no lock-delay"),
          gaps);
    }
  }

  private static String load() {
    try {
      return Files.readString(Path.of("/proc/loadavg")).split(" ")[0];
    } catch (IOException e) {
      return "unknown";
    }
  }

  private static String commit() {
    try {
      Process p = new ProcessBuilder("git", "rev-parse", "--short", "HEAD").start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
      p.waitFor();
      String dirty =
          new String(
                      new ProcessBuilder("git", "status", "--porcelain", "--untracked-files=no")
                          .start()
                          .getInputStream()
                          .readAllBytes(),
                      StandardCharsets.UTF_8)
                  .isBlank()
              ? ""
              : " (with uncommitted changes)";
      return out + dirty;
    } catch (IOException e) {
      return "unknown";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "unknown";
    }
  }
}
