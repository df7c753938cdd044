package dev.retsu.lock;

import dev.retsu.lock.internal.PgSession;
import dev.retsu.lock.internal.SessionGuard;
import dev.retsu.lock.internal.SessionTerminator;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.helpers.MessageFormatter;

/**
 * Loads the leader's code path once per JVM while this candidate is a standby, so a takeover does
 * not pay for class loading and proxy generation between the grant and the first refresh. A standby
 * JVM that never led would otherwise run that path cold at the moment that matters most: measured
 * in the failover benchmark, the cold path cost more than the lock grant itself. Safe to call from
 * any thread; only the first call does anything.
 */
final class WarmUp {

  private static final Logger LOG = LoggerFactory.getLogger(WarmUp.class);
  private static final AtomicBoolean DONE = new AtomicBoolean();

  /**
   * The classes a term touches from the grant to its first refresh and its end. Class literals, so
   * a rename breaks the build instead of silently shortening the list; a literal does not
   * initialise its class, {@link #leaderPath()} does.
   */
  private static final List<Class<?>> LEADER_PATH =
      List.of(
          AdvisoryLockLease.class,
          AdvisoryLockLease.Watcher.class,
          AdvisoryLockLease.Hooks.class,
          Listeners.class,
          Listeners.Call.class,
          AdvisoryTermLease.class,
          LeaderTerm.class,
          TermRunner.class,
          TermWatchdog.class,
          SelfFence.class,
          Term.class,
          FencingToken.class,
          LossReason.class,
          AttemptResult.class,
          LeadershipLostException.class,
          Diagnostics.class,
          Refusals.class,
          PgSession.class,
          PgSession.Evidence.class,
          PgSession.Transaction.class,
          SessionTerminator.class,
          MessageFormatter.class);

  /**
   * Classes of optional dependencies or of some of their versions, loaded by name when present:
   * SLF4J 2's argument handling (the first log line with arguments at a takeover would load it),
   * pgjdbc's abort of a connection (the first release of a lock whose session is busy would).
   */
  private static final List<String> OPTIONAL =
      List.of(
          "org.slf4j.helpers.NormalizedParameters",
          "org.postgresql.jdbc.PgConnection$AbortCommand");

  private WarmUp() {}

  /** Loads and initialises the leader path; never throws. */
  static void leaderPath() {
    if (!DONE.compareAndSet(false, true)) {
      return;
    }
    long start = System.nanoTime();
    ClassLoader loader = WarmUp.class.getClassLoader();
    for (Class<?> type : LEADER_PATH) {
      try {
        Class.forName(type.getName(), true, loader);
      } catch (ClassNotFoundException | LinkageError e) {
        LOG.debug("Warm-up could not initialise {}: {}", type.getName(), e.toString());
      }
    }
    for (String name : OPTIONAL) {
      try {
        Class.forName(name, true, loader);
      } catch (ClassNotFoundException | LinkageError e) {
        LOG.trace("Warm-up skipped {}: {}", name, e.toString());
      }
    }
    try {
      SessionGuard.prepare();
    } catch (RuntimeException e) {
      LOG.debug("Warm-up could not prepare the session guard: {}", e.toString());
    }
    LOG.debug("Leader path loaded in {} µs", (System.nanoTime() - start) / 1000);
  }
}
