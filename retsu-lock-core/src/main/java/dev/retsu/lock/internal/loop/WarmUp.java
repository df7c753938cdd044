package dev.retsu.lock.internal.loop;

import dev.retsu.lock.AttemptResult;
import dev.retsu.lock.FencingToken;
import dev.retsu.lock.LeadershipLostException;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import dev.retsu.lock.internal.Diagnostics;
import dev.retsu.lock.internal.session.LockSession;
import dev.retsu.lock.internal.session.LockWaiter;
import dev.retsu.lock.internal.session.PgSession;
import dev.retsu.lock.internal.session.ProofException;
import dev.retsu.lock.internal.session.Proofs;
import dev.retsu.lock.internal.session.Refusals;
import dev.retsu.lock.internal.session.SelfFence;
import dev.retsu.lock.internal.session.SessionGuard;
import dev.retsu.lock.internal.session.SessionIo;
import dev.retsu.lock.internal.session.SessionTerminator;
import dev.retsu.lock.internal.session.SuspectSql;
import dev.retsu.lock.internal.term.ReleasePolicy;
import dev.retsu.lock.internal.term.SessionWatchdog;
import dev.retsu.lock.internal.term.SessionWorker;
import dev.retsu.lock.internal.term.TermListeners;
import dev.retsu.lock.internal.term.TermState;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
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
public final class WarmUp {

  private static final Logger LOG = LoggerFactory.getLogger(WarmUp.class);
  private static final AtomicBoolean DONE = new AtomicBoolean();

  /**
   * The classes a term touches from the grant to its first refresh and its end. Class literals, so
   * a rename breaks the build instead of silently shortening the list; a literal does not
   * initialise its class, {@link #leaderPath()} does.
   */
  private static final List<Class<?>> LEADER_PATH =
      List.of(
          LockSession.class,
          Proofs.class,
          SuspectSql.class,
          TermListeners.class,
          TermState.class,
          SessionWorker.class,
          SessionWorker.Job.class,
          SessionWorker.Owner.class,
          LoopTerm.class,
          LoopTerm.YieldingToPreferred.class,
          LockWaiter.class,
          SessionWatchdog.class,
          ReleasePolicy.class,
          ProofException.class,
          SelfFence.class,
          Term.class,
          FencingToken.class,
          LossReason.class,
          AttemptResult.class,
          LeadershipLostException.class,
          Diagnostics.class,
          Refusals.class,
          PgSession.class,
          SessionIo.class,
          SessionIo.Evidence.class,
          PgSession.Transaction.class,
          SessionTerminator.class,
          MessageFormatter.class,
          // JDK classes a term creates that the JDK's default CDS archive may not hold: loading
          // one from the runtime image at the grant cost 0.5 to 1.5 ms in the failover benchmark
          ConcurrentLinkedQueue.class,
          CopyOnWriteArrayList.class);

  /**
   * Classes of optional dependencies or of some of their versions, loaded by name when present:
   * SLF4J 2's argument handling (the first log line with arguments at a takeover would load it),
   * pgjdbc's abort of a connection (the first release of a lock whose session is busy would); and
   * package-private types of the leader path that a class literal here cannot name. A name that no
   * longer loads is skipped in silence, so WarmUpTest loads each one.
   */
  static final List<String> OPTIONAL =
      List.of(
          "org.slf4j.helpers.NormalizedParameters",
          "dev.retsu.lock.internal.session.GuardHooks",
          "dev.retsu.lock.internal.session.OwnershipProof",
          "dev.retsu.lock.internal.term.WorkerParts",
          "dev.retsu.lock.internal.term.RunningTask",
          "dev.retsu.lock.internal.term.TermEnd",
          "dev.retsu.lock.internal.term.TermEnd$SessionEnd",
          "dev.retsu.lock.internal.term.TermFinish",
          "dev.retsu.lock.internal.term.InFlight",
          "dev.retsu.lock.internal.term.TermRefresh",
          "dev.retsu.lock.internal.term.IdleWait",
          "dev.retsu.lock.internal.term.IdleWait$CutShort",
          "org.postgresql.jdbc.PgConnection$AbortCommand");

  private WarmUp() {}

  /**
   * Runs, once, the JDK code a takeover runs first: a queue's first node, a decimal's parse (the
   * grant's answer has one), a sort of objects (a group's refreshes and ends sort terms).
   */
  private static void warmJdkPaths() {
    Queue<Object> queue = new ConcurrentLinkedQueue<>();
    queue.add(Boolean.TRUE);
    queue.poll();
    Double.parseDouble("0.000125");
    Arrays.sort(new Integer[] {2, 1}, Comparator.naturalOrder());
  }

  /** Loads and initialises the leader path; never throws. */
  public static void leaderPath() {
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
    warmJdkPaths();
    PgSession.warmMessages();
    try {
      SessionGuard.prepare();
    } catch (RuntimeException e) {
      LOG.debug("Warm-up could not prepare the session guard: {}", e.toString());
    }
    LOG.debug("Leader path loaded in {} µs", (System.nanoTime() - start) / 1000);
  }
}
