package dev.retsu.lock.internal.term;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.FencingToken;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LeaderTask;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import dev.retsu.lock.fakes.DelegatingDataSource;
import dev.retsu.lock.fakes.FakeTime;
import dev.retsu.lock.fakes.RecordingListener;
import dev.retsu.lock.internal.session.ServerBounds;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The term protocol of the one engine, without a database: the same cases for a one-key session (a
 * loop's: the session is the term's alone) and an n-key session (a group's: keys unlocked on a
 * shared session), through the time seam ({@link FakeTime}) and a stub session ({@link
 * StubSession}). The shared {@link SessionWorker} runs on its own thread and the shared watchdog on
 * its own, as in production; the task, the listeners and the stub write to one log.
 */
class TermProtocolTest {

  private static final Duration WITHIN = Duration.ofSeconds(10);
  private static final DataSource NO_DATABASE = new DelegatingDataSource(null);
  private static final Duration HEARTBEAT = Duration.ofSeconds(2);
  private static final Duration SELF_FENCE = Duration.ofSeconds(8);
  private static final Duration REFRESH_TIMEOUT = Duration.ofSeconds(5);
  private static final ServerBounds BOUNDS =
      new ServerBounds(Duration.ofSeconds(5), Duration.ofSeconds(2), 3, Duration.ofSeconds(11));

  /** The two shapes of session the engine serves. */
  enum Shape {
    ONE_KEY(ReleasePolicy.END_SESSION, 1),
    N_KEYS(ReleasePolicy.UNLOCK_KEY, 3);

    final ReleasePolicy policy;
    final int keys;

    Shape(ReleasePolicy policy, int keys) {
      this.policy = policy;
      this.keys = keys;
    }
  }

  private final FakeTime time = new FakeTime();
  private final List<String> log = new CopyOnWriteArrayList<>();
  private final RecordingListener heard = new RecordingListener();
  private final AtomicBoolean closing = new AtomicBoolean();
  private final SessionWatchdog watchdog = new SessionWatchdog(time, "unit");
  private final List<Thread> threads = new ArrayList<>();
  private int pids = 100;

  /** When set, {@code onLost} of a YIELDED term counts the first down and awaits the second. */
  private volatile CountDownLatch[] yieldedOnLostBlocks;

  @AfterEach
  void stop() throws InterruptedException {
    closing.set(true);
    watchdog.stop();
    for (Thread t : threads) {
      t.interrupt();
      t.join(WITHIN.toMillis());
    }
  }

  /** One session, its worker and its terms (announced), the worker running on its own thread. */
  private final class Fixture {
    final StubSession session;
    final SessionWorker worker;
    final List<TermState> terms = new ArrayList<>();

    Fixture(Shape shape, LeaderTask task) {
      this(shape, task, true);
    }

    Fixture(Shape shape, LeaderTask task, boolean announce) {
      int pid = ++pids;
      session = new StubSession(log, pid, time, HEARTBEAT, SELF_FENCE);
      TermOptions options =
          new TermOptions(
              NO_DATABASE,
              "unit",
              Duration.ofSeconds(1),
              REFRESH_TIMEOUT,
              HEARTBEAT,
              SELF_FENCE,
              BOUNDS,
              Duration.ofSeconds(10),
              Duration.ofSeconds(2),
              true,
              List.of(),
              time,
              null);
      TermListeners listeners = new TermListeners(List.of(heard, logsOnLost()), "[unit]");
      worker =
          new SessionWorker(
              session,
              options,
              listeners,
              shape.policy,
              new SessionWorker.Owner() {},
              closing::get);
      List<LockKey> keys = new ArrayList<>();
      for (int i = 0; i < shape.keys; i++) {
        keys.add(LockKey.of(pid * 100L + i));
      }
      session.held(keys);
      for (LockKey k : keys) {
        terms.add(
            worker.begin(
                new Term(1, k, "unit", time.now(), new FencingToken(1, 0, 1_000 + pid), pid)));
      }
      if (announce) {
        terms.forEach(worker::announce);
      }
      watchdog.watch(worker);
      Thread t = new Thread(() -> worker.run(task), "retsu-lock-test-worker-" + pid);
      threads.add(t);
      t.start();
    }
  }

  private LeaderListener logsOnLost() {
    return new LeaderListener() {
      @Override
      public void onLost(Term term, LossReason reason, Throwable cause) {
        log.add("onLost " + term.key().value() % 100 + " " + reason);
        CountDownLatch[] blocks = yieldedOnLostBlocks;
        if (blocks != null && reason == LossReason.YIELDED) {
          blocks[0].countDown();
          try {
            blocks[1].await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          log.add("onLost returns");
        }
      }
    };
  }

  private Fixture start(Shape shape, LeaderTask task) {
    if (threads.isEmpty()) {
      watchdog.begin();
    }
    return new Fixture(shape, task);
  }

  /** The first key's first refresh blocks until interrupted, then until {@code mayReturn}. */
  private LeaderTask firstKeyBlocks(CountDownLatch started, CountDownLatch mayReturn) {
    AtomicBoolean once = new AtomicBoolean();
    return ctx -> {
      if (ctx.term().key().value() % 100 != 0 || !once.compareAndSet(false, true)) {
        return;
      }
      log.add("task");
      started.countDown();
      try {
        new CountDownLatch(1).await();
      } catch (InterruptedException e) {
        log.add("interrupted, leader " + ctx.isLeader());
        mayReturn.await();
        log.add("task returns");
        throw e;
      }
    };
  }

  /**
   * A term that ended between refreshes is finished by the worker while {@code close()} runs on
   * another thread: the closing thread ends the session only once the worker's listeners returned,
   * so no {@code onLost} is still running when the lock is released.
   */
  @ParameterizedTest
  @EnumSource(Shape.class)
  void aCloseWhileTheWorkerTellsAnEndedTermReleasesOnlyOnceTheListenersReturned(Shape shape)
      throws Exception {
    CountDownLatch inOnLost = new CountDownLatch(1);
    CountDownLatch mayReturn = new CountDownLatch(1);
    yieldedOnLostBlocks = new CountDownLatch[] {inOnLost, mayReturn};
    Fixture f = start(shape, ctx -> {});
    f.worker.endTerm(f.terms.get(0), LossReason.YIELDED, null);
    assertThat(inOnLost.await(WITHIN.toMillis(), TimeUnit.MILLISECONDS)).isTrue();

    Thread closer = new Thread(f.worker::close, "retsu-lock-test-closer");
    threads.add(closer);
    closer.start();
    await()
        .during(Duration.ofMillis(300))
        .atMost(WITHIN)
        .until(() -> f.session.isOpen() && !log.contains("released"));

    mayReturn.countDown();
    closer.join(WITHIN.toMillis());
    assertThat(f.session.isOpen()).isFalse();
    assertThat(log.indexOf("onLost returns")).isLessThan(log.indexOf("released"));
  }

  @ParameterizedTest
  @EnumSource(Shape.class)
  void closeEndsEveryTermInvalidFirstThenAwaitsTheTaskThenTellsThenReleases(Shape shape)
      throws Exception {
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch mayReturn = new CountDownLatch(1);
    Fixture f = start(shape, firstKeyBlocks(started, mayReturn));
    assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();

    Thread closer = new Thread(f.worker::close, "retsu-lock-test-close");
    closer.start();
    await().atMost(WITHIN).until(() -> log.contains("interrupted, leader false"));
    assertThat(f.terms).allMatch(TermState::ended); // every term invalid at once
    assertThat(log)
        .as("nobody is told before the task returns")
        .noneMatch(l -> l.startsWith("onLost"));
    mayReturn.countDown();
    closer.join(WITHIN.toMillis());

    List<String> expected =
        new ArrayList<>(List.of("task", "interrupted, leader false", "task returns"));
    for (int i = 0; i < shape.keys; i++) {
      expected.add("onLost " + i + " CLOSED");
    }
    expected.add("notified " + shape.keys + " released, unlocked all"); // before the release
    expected.add("released");
    assertThat(log).containsExactlyElementsOf(expected);
    assertThat(heard.kinds().subList(0, shape.keys)).containsOnly("acquired");
    assertThat(heard.lossReasons()).hasSize(shape.keys).containsOnly(LossReason.CLOSED);
  }

  @ParameterizedTest
  @EnumSource(Shape.class)
  void onLostComesExactlyOnceAndOnlyAfterOnAcquired(Shape shape) throws Exception {
    time.freeze(); // two workers on one clock: neither may push the other past its deadline
    if (threads.isEmpty()) {
      watchdog.begin();
    }
    Fixture silent = new Fixture(shape, ctx -> {}, false); // never announced
    silent.terms.forEach(t -> silent.worker.endTerm(t, LossReason.CLOSED, null));
    Fixture f = start(shape, ctx -> {});
    TermState first = f.terms.get(0);
    f.worker.endTerm(first, LossReason.LOCK_NOT_HELD, null);
    f.worker.endTerm(first, LossReason.CLOSED, null); // a term ends once
    await().atMost(WITHIN).until(() -> heard.lossReasons().size() >= 1);
    f.worker.close();
    silent.worker.close();

    assertThat(heard.of("lost").get(0).term()).isEqualTo(first.term());
    assertThat(heard.lossReasons()).first().isEqualTo(LossReason.LOCK_NOT_HELD);
    assertThat(heard.events)
        .as("no onLost without onAcquired")
        .noneMatch(e -> silent.terms.stream().anyMatch(t -> t.term().equals(e.term())));
    assertThat(silent.session.isOpen()).as("its keys were released all the same").isFalse();
    // per term: onAcquired before anything, onLost once and last
    for (TermState t : f.terms) {
      List<String> kinds =
          heard.events.stream().filter(e -> t.term().equals(e.term())).map(e -> e.kind()).toList();
      assertThat(kinds).startsWith("acquired").endsWith("lost");
      assertThat(kinds.stream().filter("lost"::equals)).hasSize(1);
    }
  }

  @ParameterizedTest
  @EnumSource(Shape.class)
  void aRefreshThatReturnsIsHeardAsSucceededForItsTermOnTheWorkersThread(Shape shape)
      throws Exception {
    Map<Long, AtomicInteger> runs = new ConcurrentHashMap<>();
    Fixture f =
        start(
            shape,
            ctx ->
                runs.computeIfAbsent(ctx.term().key().value(), k -> new AtomicInteger())
                    .incrementAndGet());
    await()
        .atMost(WITHIN)
        .until(
            () ->
                f.terms.stream()
                    .allMatch(
                        t -> heard.of("refreshed").stream().anyMatch(e -> e.term() == t.term())));
    f.worker.close();

    for (TermState t : f.terms) {
      List<RecordingListener.Event> refreshed =
          heard.of("refreshed").stream().filter(e -> e.term() == t.term()).toList();
      assertThat(refreshed)
          .isNotEmpty()
          .allMatch(e -> e.thread().startsWith("retsu-lock-test-worker-"), "on the worker");
      assertThat(refreshed.size())
          .as("one per run that returned")
          .isLessThanOrEqualTo(runs.get(t.term().key().value()).get());
      List<String> kinds =
          heard.events.stream().filter(e -> e.term() == t.term()).map(e -> e.kind()).toList();
      assertThat(kinds).startsWith("acquired", "refreshed").endsWith("lost");
    }
  }

  @ParameterizedTest
  @EnumSource(Shape.class)
  void aRefreshTimeoutEndsOnlyItsKey(Shape shape) throws Exception {
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch mayReturn = new CountDownLatch(0);
    Fixture f = start(shape, firstKeyBlocks(started, mayReturn));
    assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();

    time.advance(REFRESH_TIMEOUT.plusSeconds(1)); // the watchdog reads the simulated clock
    await().atMost(WITHIN).until(() -> heard.lossReasons().contains(LossReason.REFRESH_TIMED_OUT));
    await().atMost(WITHIN).until(() -> log.contains("task returns"));

    TermState timedOut = f.terms.get(0);
    assertThat(timedOut.reason()).isEqualTo(LossReason.REFRESH_TIMED_OUT);
    assertThat(heard.of("refreshFailed")).hasSize(1);
    if (shape == Shape.ONE_KEY) {
      assertThat(log).contains("aborted"); // its session was its own: released at once
    } else {
      await().atMost(WITHIN).until(() -> log.contains("unlocked 1"));
      assertThat(f.terms.subList(1, shape.keys)).noneMatch(TermState::ended);
      assertThat(f.session.isOpen()).isTrue();
    }
  }

  @ParameterizedTest
  @EnumSource(Shape.class)
  void aSessionLossEndsExactlyTheTermsOfItsKeys(Shape shape) throws Exception {
    time.freeze(); // two workers on one clock: only the test moves it
    Fixture lost = start(shape, ctx -> {});
    Fixture other = start(shape, ctx -> {});

    lost.session.loseSession(new SQLException("terminating connection", "57P01"));
    await().atMost(WITHIN).until(() -> heard.lossReasons().size() == shape.keys);

    assertThat(lost.terms).allMatch(t -> t.reason() == LossReason.SESSION_LOST);
    assertThat(other.terms).noneMatch(TermState::ended);
    assertThat(lost.session.isOpen()).isFalse();
    assertThat(other.session.isOpen()).isTrue();
    assertThat(heard.lossReasons()).containsOnly(LossReason.SESSION_LOST);
  }

  @ParameterizedTest
  @EnumSource(Shape.class)
  void selfFencingAbortsTheSessionBeforeTheServerBoundAfterTellingListeners(Shape shape) {
    Fixture f = start(shape, ctx -> {});
    f.session.silence(); // a partition: no round trip succeeds from now on

    await().atMost(WITHIN).until(() -> f.session.abortedAt() != 0);
    long fencedAfter = f.session.abortedAt() - f.session.proofs().fence().lastProofStart();
    assertThat(fencedAfter).isGreaterThanOrEqualTo(SELF_FENCE.toNanos());
    assertThat(fencedAfter)
        .as("aborted before the server bound minus the margin")
        .isLessThanOrEqualTo(BOUNDS.bound().minus(ServerBounds.MIN_FENCING_MARGIN).toNanos());
    assertThat(heard.lossReasons()).hasSize(shape.keys).containsOnly(LossReason.SELF_FENCED);
    assertThat(log.get(log.size() - 1)).isEqualTo("aborted");
  }

  @ParameterizedTest
  @EnumSource(Shape.class)
  void anOwnershipProofRunsWhileTheTaskKeepsIssuingStatements(Shape shape) throws Exception {
    CountDownLatch done = new CountDownLatch(1);
    long[] taskStart = new long[1];
    AtomicBoolean once = new AtomicBoolean();
    java.util.concurrent.atomic.AtomicReference<StubSession> session =
        new java.util.concurrent.atomic.AtomicReference<>();
    Fixture f =
        start(
            shape,
            ctx -> {
              if (!once.compareAndSet(false, true)) {
                return;
              }
              await().atMost(WITHIN).until(() -> session.get() != null);
              taskStart[0] = time.nanoTime();
              long until = time.nanoTime() + Duration.ofMillis(4_500).toNanos(); // < timeout
              while (time.nanoTime() < until) {
                session.get().statement(); // user SQL: alive, but ownership unproven
                time.advance(Duration.ofMillis(100));
                ctx.ensureLeader();
              }
              done.countDown();
            });
    session.set(f.session);
    assertThat(done.await(10, TimeUnit.SECONDS)).isTrue();

    List<Long> during = f.session.proofTimes().stream().filter(t -> t >= taskStart[0]).toList();
    assertThat(during)
        .as("ownership proofs during a 4.5 s task of statements")
        .hasSizeGreaterThanOrEqualTo(2);
    long previous = taskStart[0];
    for (long t : during) {
      assertThat(t - previous)
          .as("no check passes more than one heartbeat after the last ownership proof")
          .isLessThanOrEqualTo(HEARTBEAT.plusMillis(100).toNanos());
      previous = t;
    }
  }
}
