package dev.retsu.lock;

import dev.retsu.lock.internal.SessionGuard;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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

  /** The classes a term touches from the grant to its first refresh and its end. */
  private static final List<String> LEADER_PATH =
      List.of(
          "dev.retsu.lock.AdvisoryLockLease",
          "dev.retsu.lock.AdvisoryLockLease$Hooks",
          "dev.retsu.lock.AdvisoryLockLease$Watcher",
          "dev.retsu.lock.LeaderTerm",
          "dev.retsu.lock.TermRunner",
          "dev.retsu.lock.TermWatchdog",
          "dev.retsu.lock.SelfFence",
          "dev.retsu.lock.Term",
          "dev.retsu.lock.FencingToken",
          "dev.retsu.lock.LossReason",
          "dev.retsu.lock.LeadershipLostException",
          "dev.retsu.lock.Diagnostics",
          "dev.retsu.lock.Refusals",
          "dev.retsu.lock.internal.PgSession",
          "dev.retsu.lock.internal.PgSession$Evidence",
          "dev.retsu.lock.internal.PgSession$Transaction",
          "dev.retsu.lock.internal.SessionTerminator",
          "org.slf4j.helpers.MessageFormatter");

  private WarmUp() {}

  /** Loads and initialises the leader path; never throws. */
  static void leaderPath() {
    if (!DONE.compareAndSet(false, true)) {
      return;
    }
    long start = System.nanoTime();
    ClassLoader loader = WarmUp.class.getClassLoader();
    for (String name : LEADER_PATH) {
      try {
        Class.forName(name, true, loader);
      } catch (ClassNotFoundException | LinkageError e) {
        LOG.debug("Warm-up could not load {}: {}", name, e.toString());
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
