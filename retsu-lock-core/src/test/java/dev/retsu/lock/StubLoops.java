package dev.retsu.lock;

import dev.retsu.lock.fakes.DelegatingDataSource;
import dev.retsu.lock.fakes.FakeTime;
import dev.retsu.lock.internal.loop.LoopSettings;
import dev.retsu.lock.internal.loop.Standby;
import dev.retsu.lock.internal.session.Session;
import dev.retsu.lock.internal.term.StubSession;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import javax.sql.DataSource;

/**
 * Loops on {@link StubSession}s and {@link FakeTime}: the whole contend loop, its terms and their
 * watchdogs run as in production, but every attempt's outcome comes from a script and no database
 * is involved.
 */
final class StubLoops {

  /** A data source that is never called: every attempt goes to the script. */
  static final DataSource NO_DATABASE = new DelegatingDataSource(null);

  /** The key of every stub loop. */
  static final LockKey KEY = LockKey.of(1L);

  /** A script step: the lock is held elsewhere. */
  static final Object HELD = "held elsewhere";

  private StubLoops() {}

  /** A builder on no database and simulated time, with candidate id {@code unit}. */
  static LeaderLoopBuilder builder(FakeTime time) {
    return LeaderLoop.builder(NO_DATABASE, KEY).candidateId("unit").timeSource(time);
  }

  /**
   * A loop whose attempts follow {@code script}: {@link #HELD}, a {@link StubSession} to win, or a
   * {@link RuntimeException} to throw. After the script every attempt wins a new stub session that
   * logs to {@code log}. The standby's random draw is 0, so a jittered wait is exactly the retry
   * interval.
   */
  static LeaderLoop loop(LeaderLoopBuilder b, List<String> log, Object... script) {
    LoopSettings settings = b.settings();
    return new LeaderLoop(
        settings, new Standby(settings, () -> 0.0, attempts(log, settings, script)));
  }

  /** A stub session holding the stub loops' key, on the builder's clock and bounds. */
  static StubSession session(LeaderLoopBuilder b, List<String> log, int pid) {
    LoopSettings s = b.settings();
    return StubSession.holding(
        log, pid, KEY, s.term().time(), s.term().heartbeatInterval(), s.term().selfFenceAfter());
  }

  private static Supplier<Optional<Session>> attempts(
      List<String> log, LoopSettings settings, Object... script) {
    Iterator<Object> steps = List.of(script).iterator();
    AtomicInteger pids = new AtomicInteger(100);
    return () -> {
      Object step =
          steps.hasNext()
              ? steps.next()
              : StubSession.holding(
                  log,
                  pids.incrementAndGet(),
                  KEY,
                  settings.term().time(),
                  settings.term().heartbeatInterval(),
                  settings.term().selfFenceAfter());
      if (step instanceof RuntimeException) {
        throw (RuntimeException) step;
      }
      return step == HELD ? Optional.empty() : Optional.of((Session) step);
    };
  }
}
