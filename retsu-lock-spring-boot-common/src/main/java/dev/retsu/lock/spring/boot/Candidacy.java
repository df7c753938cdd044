package dev.retsu.lock.spring.boot;

import dev.retsu.lock.LeaderContext;
import dev.retsu.lock.LeaderInfo;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LeaderTask;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import java.util.Map;
import java.util.Optional;

/**
 * How one named leader takes part: on the database ({@link LoopCandidacy}) or in a test mode
 * ({@link TestModeCandidacy}). {@link RetsuLeader} is the lifecycle facade over exactly one; a new
 * capability (a leadership watch, a yield) is one method here and one in each implementation, never
 * a branch in the facade. Implementations are thread-safe.
 */
interface Candidacy {

  /**
   * Starts taking part; returns at once.
   *
   * @param task the leader's task, to run on the term's thread every refresh
   * @param terms where terms are reported, on the thread that sees them
   */
  void start(LeaderTask task, Terms terms);

  /** Stops gracefully: work stops, listeners hear the end, then the lock is released. Blocks. */
  void close();

  /** Whether this instance leads now: a local hint without I/O. */
  boolean isLeader();

  /** The term, while leading. */
  Optional<Term> currentTerm();

  /** Who holds the lock (may query the database). */
  Optional<LeaderInfo> currentHolder();

  /** What ended it for good; empty while it takes part or after a graceful close. */
  Optional<Throwable> failure();

  /** The loop, for a candidacy on the database. */
  default Optional<LeaderLoop> loop() {
    return Optional.empty();
  }

  /**
   * Adds what people need to know, without I/O: the loop's state, and while standing by, why it
   * does not lead ({@code standby} details).
   */
  void describe(Map<String, Object> details);

  /** What a candidacy reports to its leader. Called one at a time per leader. */
  interface Terms {

    /** A term started (before its first refresh). */
    void started(Term term);

    /** A refresh of the current term succeeded. */
    void refreshed(Term term);

    /** The term ended; leader work must stop before this returns (the lock is still held). */
    void ended(Term term, LossReason reason);

    /** It will never lead again (the loop failed). */
    void failed(Throwable cause);

    /** Runs one refresh of the task with the term bound to the thread. */
    void refresh(LeaderTask task, LeaderContext ctx) throws Exception;
  }
}
