package dev.retsu.lock.benchmarks;

import dev.retsu.lock.benchmarks.CandidateSpec.Impl;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * How big a run is: the full run for docs/BENCHMARKS.md, or the CI-sized smoke run. Immutable.
 *
 * @param name {@code full} or {@code smoke}
 * @param reps repetitions per scenario for the 1 s configs
 * @param defaultReps repetitions per scenario for the configs with library defaults
 * @param idleWindow idle-cost window
 * @param scaleWindow scale measurement window
 * @param oneKeyCandidates loops on one key
 * @param oneKeyRetries retry intervals for the one-key run
 * @param keySteps key counts of the many-keys ramp
 * @param jmh whether to run JMH, and how long: iterations and their length
 * @param jmhIterationMillis length of one JMH iteration
 * @param smoke short safety knobs so partitions resolve in seconds
 */
record Profile(
    String name,
    int reps,
    int defaultReps,
    Duration idleWindow,
    Duration scaleWindow,
    int oneKeyCandidates,
    List<Duration> oneKeyRetries,
    int[] keySteps,
    int jmh,
    long jmhIterationMillis,
    boolean smoke) {

  static Profile fullRun() {
    return new Profile(
        "full",
        20,
        3,
        Duration.ofSeconds(60),
        Duration.ofSeconds(20),
        1000,
        List.of(Duration.ofSeconds(15), Duration.ofSeconds(1)),
        new int[] {1000, 2500, 5000, 10000},
        5,
        2000,
        false);
  }

  static Profile smokeRun() {
    return new Profile(
        "smoke",
        1,
        0,
        Duration.ofSeconds(2),
        Duration.ofSeconds(2),
        20,
        List.of(Duration.ofSeconds(1)),
        new int[] {20},
        1,
        300,
        true);
  }

  /** The WAIT timeouts the horizon part observes. */
  List<Duration> horizonTimeouts() {
    return smoke
        ? List.of(Duration.ofSeconds(1))
        : List.of(
            Duration.ofSeconds(10),
            Duration.ofSeconds(30),
            Duration.ofSeconds(60),
            Duration.ofSeconds(300));
  }

  /** The longest the horizon part observes one setup (else twice its timeout). */
  Duration horizonCap() {
    return smoke ? Duration.ofSeconds(3) : Duration.ofSeconds(600);
  }

  /** The configs of the failover and idle runs, 1 s ones first. */
  List<FailoverBenchmark.Config> configs(String versionsRetsu, String shedlock, String spring) {
    List<FailoverBenchmark.Config> c = new ArrayList<>();
    if (smoke) {
      Duration r = Duration.ofMillis(500);
      c.add(
          smokeRetsu(
              "retsu-poll",
              versionsRetsu,
              "poll",
              r,
              "POLL, retry 0.5 s; smoke safety knobs: heartbeat 0.5 s, self-fence 2 s, keepalive"
                  + " 2+1x1 s, idle_session_timeout 4 s"));
      c.add(
          smokeRetsu(
              "retsu-wait", versionsRetsu, "wait", r, "WAIT, retry 0.5 s; smoke safety knobs"));
      c.add(raw("raw-waiter", r, reps, Duration.ofSeconds(15), Duration.ofSeconds(2), 1));
      // The pooled and fastFailover() paths, at the graceful close only: the CI run checks that
      // they run, the full run measures them.
      FailoverBenchmark.Config fastHikari =
          retsu(
              "retsu-wait",
              versionsRetsu,
              "wait",
              r,
              reps,
              "WAIT, fastFailover(), on a HikariCP pool with its defaults");
      c.add(
          closeOnly(
              new FailoverBenchmark.Config(
                  "retsu-wait-hikari",
                  fastHikari.library() + " + HikariCP",
                  fastHikari.settings(),
                  fastHikari.template().withPool("hikari").withFastFailover(),
                  reps,
                  Duration.ofSeconds(15))));
      c.add(
          closeOnly(
              pooled(
                  raw("raw-waiter", r, reps, Duration.ofSeconds(15), Duration.ofSeconds(2), 1),
                  "hikari")));
      c.add(
          peer(
              "shedlock",
              Impl.SHEDLOCK,
              "ShedLock " + shedlock,
              r,
              Duration.ofSeconds(2),
              null,
              reps,
              "task every 0.5 s, lockAtMostFor 2 s",
              Duration.ofSeconds(6)));
      c.add(
          peer(
              "spring",
              Impl.SPRING,
              "Spring Integration " + spring,
              r,
              Duration.ofSeconds(2),
              r,
              reps,
              "heartBeat 0.5 s, TTL 2 s",
              Duration.ofSeconds(6)));
      return c;
    }
    Duration one = Duration.ofSeconds(1);
    Duration fifteen = Duration.ofSeconds(15);
    c.add(
        retsu(
            "retsu-poll-1s",
            versionsRetsu,
            "poll",
            one,
            reps,
            "POLL, retry 1 s, refresh 1 s; safety knobs at defaults"));
    c.add(
        retsu(
            "retsu-wait-1s",
            versionsRetsu,
            "wait",
            one,
            reps,
            "WAIT, retry 1 s, refresh 1 s; safety knobs at defaults"));
    c.add(
        raw(
            "raw-waiter-1s",
            one,
            reps,
            one.plus(Duration.ofSeconds(45)),
            Duration.ofSeconds(5),
            3));
    // The same WAIT standby and raw waiter borrowing from the pools applications use, in the
    // scenarios where the physical session, not a safety knob, decides.
    for (String pool : List.of("hikari", "dbcp2")) {
      c.add(
          physical(
              pooled(
                  retsu(
                      "retsu-wait-1s",
                      versionsRetsu,
                      "wait",
                      one,
                      reps,
                      "WAIT, retry 1 s, refresh 1 s; safety knobs at defaults"),
                  pool)));
      c.add(
          physical(
              pooled(
                  raw(
                      "raw-waiter-1s",
                      one,
                      reps,
                      one.plus(Duration.ofSeconds(45)),
                      Duration.ofSeconds(5),
                      3),
                  pool)));
    }
    // fastFailover(): a partitioned or paused leader replaced within about 3 s
    for (String mode : List.of("poll", "wait")) {
      FailoverBenchmark.Config f =
          retsu(
              "retsu-" + mode + "-fast",
              versionsRetsu,
              mode,
              one,
              reps,
              mode.toUpperCase(java.util.Locale.ROOT)
                  + ", fastFailover() (retry 0.5 s, heartbeat 0.5 s, self-fence 1 s, keepalives"
                  + " 1+1x1 s, idle_session_timeout 2 s, round trips 1 s), refresh 1 s");
      c.add(
          new FailoverBenchmark.Config(
              f.name(),
              f.library(),
              f.settings(),
              f.template().withFastFailover(),
              reps,
              Duration.ofSeconds(30)));
    }
    c.add(
        peer(
            "shedlock-1s",
            Impl.SHEDLOCK,
            "ShedLock " + shedlock,
            one,
            Duration.ofSeconds(3),
            null,
            reps,
            "task every 1 s, lockAtMostFor 3 s (extended every 1 s)",
            Duration.ofSeconds(30)));
    c.add(
        peer(
            "spring-1s",
            Impl.SPRING,
            "Spring Integration " + spring,
            one,
            Duration.ofSeconds(3),
            one,
            reps,
            "heartBeat 1 s, TTL 3 s",
            Duration.ofSeconds(30)));
    // the adapters: the same leader harnesses on retsu-lock-shedlock and
    // retsu-lock-spring-integration
    c.add(
        peer(
            "retsu-shedlock-1s",
            Impl.RETSU_SHEDLOCK,
            "retsu-lock-shedlock " + versionsRetsu + " (ShedLock " + shedlock + ")",
            one,
            Duration.ofSeconds(3),
            null,
            reps,
            "task every 1 s, lockAtMostFor 3 s (extended every 1 s); server keepalives 5+2x3 s",
            Duration.ofSeconds(30)));
    c.add(
        peer(
            "retsu-spring-1s",
            Impl.RETSU_SPRING,
            "retsu-lock-spring-integration "
                + versionsRetsu
                + " (Spring Integration "
                + spring
                + ")",
            one,
            null,
            null,
            reps,
            "RetsuLeaderInitiator, POLL retry 1 s; safety knobs at core's defaults",
            Duration.ofSeconds(45)));
    if (defaultReps > 0) {
      c.add(
          retsu(
              "retsu-poll-default",
              versionsRetsu,
              "poll",
              fifteen,
              defaultReps,
              "POLL, every option at its default (retry every 13.5 to 15 s, refresh 15 s)"));
      c.add(
          peer(
              "shedlock-default",
              Impl.SHEDLOCK,
              "ShedLock " + shedlock,
              fifteen,
              Duration.ofSeconds(30),
              null,
              defaultReps,
              "task every 15 s, lockAtMostFor 30 s (KeepAliveLockProvider's minimum), extended every"
                  + " 15 s",
              Duration.ofSeconds(90)));
      c.add(
          peer(
              "spring-default",
              Impl.SPRING,
              "Spring Integration " + spring,
              Duration.ofMillis(500),
              null,
              null,
              defaultReps,
              "defaults: heartBeat 0.5 s, busyWait 50 ms, TTL 10 s, idleBetweenTries 100 ms",
              Duration.ofSeconds(60)));
    }
    return c;
  }

  private static FailoverBenchmark.Config retsu(
      String name, String version, String mode, Duration interval, int reps, String settings) {
    return new FailoverBenchmark.Config(
        name,
        "retsu-lock " + version,
        settings,
        new CandidateSpec(
            Impl.RETSU,
            mode,
            null,
            null,
            null,
            0,
            interval,
            interval,
            null,
            null,
            null,
            null,
            null,
            0,
            null),
        reps,
        interval.plus(Duration.ofSeconds(45)));
  }

  /**
   * The config borrowing from a pool: named {@code <name>-<pool>}, the same template with {@code
   * pool}. The raw waiter's graceful close then unlocks before it hands the connection back.
   */
  private static FailoverBenchmark.Config pooled(FailoverBenchmark.Config c, String pool) {
    String words =
        switch (pool) {
          case "hikari" -> "HikariCP";
          case "dbcp2" -> "Apache Commons DBCP2";
          default -> throw new IllegalArgumentException("pool must be hikari or dbcp2: " + pool);
        };
    String how =
        c.template().impl() == Impl.RAW
            ? "; its connection from a "
                + words
                + " pool with the pool's defaults (a graceful close unlocks, then returns it and"
                + " closes the pool)"
            : "; on a " + words + " pool with the pool's defaults";
    return new FailoverBenchmark.Config(
        c.name() + "-" + pool,
        c.library() + " + " + words,
        c.settings() + how,
        c.template().withPool(pool),
        c.reps(),
        c.window(),
        c.only(),
        c.idle());
  }

  /** Only where the physical session decides: close, kill -9, pg_terminate_backend; no idle. */
  private static FailoverBenchmark.Config physical(FailoverBenchmark.Config c) {
    return new FailoverBenchmark.Config(
        c.name(),
        c.library(),
        c.settings(),
        c.template(),
        c.reps(),
        c.window(),
        java.util.EnumSet.of(
            FailoverBenchmark.Scenario.CLOSE,
            FailoverBenchmark.Scenario.KILL,
            FailoverBenchmark.Scenario.TERMINATE),
        false);
  }

  private static FailoverBenchmark.Config closeOnly(FailoverBenchmark.Config c) {
    return new FailoverBenchmark.Config(
        c.name(),
        c.library(),
        c.settings(),
        c.template(),
        c.reps(),
        c.window(),
        java.util.EnumSet.of(FailoverBenchmark.Scenario.CLOSE),
        false);
  }

  /** A retsu config for the CI smoke run, with short safety knobs so rounds take seconds. */
  private FailoverBenchmark.Config smokeRetsu(
      String name, String version, String mode, Duration interval, String settings) {
    return new FailoverBenchmark.Config(
        name,
        "retsu-lock " + version,
        settings,
        new CandidateSpec(
            Impl.RETSU,
            mode,
            null,
            null,
            null,
            0,
            interval,
            interval,
            null,
            Duration.ofMillis(500),
            Duration.ofSeconds(2),
            Duration.ofSeconds(2),
            Duration.ofSeconds(1),
            1,
            Duration.ofSeconds(4)),
        reps,
        // How long to wait for a new leader. The smoke run asserts that one emerges, never how
        // fast: the server's worst bound here is 4 s plus a 0.5 s retry, and a CI machine running
        // other builds once needed more than the former 6 s.
        Duration.ofSeconds(15));
  }

  /** The physical limit: a plain session blocked in pg_advisory_lock (no token, no checks). */
  private static FailoverBenchmark.Config raw(
      String name,
      Duration refresh,
      int reps,
      Duration window,
      Duration keepaliveIdle,
      int keepaliveCount) {
    Duration interval =
        keepaliveIdle.compareTo(Duration.ofSeconds(2)) <= 0
            ? Duration.ofSeconds(1)
            : Duration.ofSeconds(2);
    return new FailoverBenchmark.Config(
        name,
        "pgjdbc only",
        String.format(
            java.util.Locale.ROOT,
            "a plain session blocked in pg_advisory_lock; server keepalives %d+%dx%d s and the"
                + " same tcp_user_timeout as retsu; no fencing token, no self-fencing: a baseline,"
                + " not a safe leader",
            keepaliveIdle.toSeconds(),
            interval.toSeconds(),
            keepaliveCount),
        new CandidateSpec(
            Impl.RAW,
            "wait",
            null,
            null,
            null,
            0,
            refresh,
            refresh,
            null,
            null,
            null,
            keepaliveIdle,
            interval,
            keepaliveCount,
            null),
        reps,
        window);
  }

  private static FailoverBenchmark.Config peer(
      String name,
      Impl impl,
      String library,
      Duration retry,
      Duration ttl,
      Duration heartbeat,
      int reps,
      String settings,
      Duration window) {
    Duration refresh = retry.compareTo(Duration.ofSeconds(1)) < 0 ? retry : Duration.ofSeconds(1);
    return new FailoverBenchmark.Config(
        name,
        library,
        settings + "; HikariCP pool of at most 2",
        new CandidateSpec(
            impl,
            "poll",
            null,
            null,
            null,
            0,
            retry,
            impl == Impl.SHEDLOCK ? retry : refresh,
            ttl,
            heartbeat,
            null,
            null,
            null,
            0,
            null),
        reps,
        window);
  }
}
