package dev.retsu.lock.faults;

import dev.retsu.lock.faults.FaultCandidate.Action;
import dev.retsu.lock.faults.FaultCandidate.Arm;
import dev.retsu.lock.faults.FaultCandidate.Phase;
import dev.retsu.lock.testing.TermChecker;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.stream.IntStream;
import java.util.stream.Stream;

/**
 * What the group fault scenarios share ({@link LeaderGroupFaultIntegrationTest}, {@link
 * LeaderGroupKillIntegrationTest}): seeded rounds, where a fault strikes, the members' timed task,
 * and the verdict. Each scenario runs {@link #ROUNDS} rounds; each round draws from its own {@link
 * Random}, seeded from {@code retsu.faults.seed}, the scenario and the round, so a failing round
 * replays with the same seed and at least as many rounds. Figures go to {@code
 * target/fault-results.tsv} like the single-key suite's.
 */
final class GroupFaults {

  /**
   * Rounds per scenario: {@code retsu.faults.groupRounds}, else {@code retsu.faults.rounds} (16
   * under {@code -Pfaults-full}) but at least 2, so that every build strikes each scenario at two
   * of its six places (the full run at all of them); a round takes seconds.
   */
  static final int ROUNDS =
      Integer.getInteger(
          "retsu.faults.groupRounds", Math.max(2, Integer.getInteger("retsu.faults.rounds", 1)));

  static final long SEED = Long.getLong("retsu.faults.seed", 20261130L);

  /**
   * How long an armed phase lasts at least, so that a fault injected on seeing PHASE lands inside
   * it; well inside the members' 2 s refresh timeout.
   */
  static final long LINGER_MS = 600;

  /**
   * Each half of a key's refresh (before and after the check) takes 5 to 60 ms, and every other
   * refresh runs in a transaction: keys share a session's worker, so their tasks run in turn.
   */
  static final TimedTask.Profile TASK = new TimedTask.Profile(5, 60, "MIXED");

  /** Where a fault strikes. */
  enum Where {
    /** A key's task runs, before its check. */
    PRE,
    /** Between a key's check and its effect. */
    POST,
    /** Before the check, inside an open transaction on the key's session. */
    TX,
    /** A key's task just returned. */
    BETWEEN,
    /** Inside a member's {@code close()}: its first {@code onLost(CLOSED)}, before the release. */
    CLOSE,
    /** Right after a member joined: at its first acquisition, while others yield to it. */
    JOIN;

    /** The arm of this phase ({@link #JOIN} has none: the test watches the joiner). */
    Arm arm() {
      return new Arm(Phase.valueOf(name()), Action.NONE, LINGER_MS);
    }
  }

  private GroupFaults() {}

  /** The rounds of a scenario, for {@code @MethodSource}. */
  static Stream<Integer> rounds() {
    return IntStream.rangeClosed(1, ROUNDS).boxed();
  }

  /** A round's own seed: adding or reordering scenarios or rounds changes no other. */
  static long seed(String scenario, int round) {
    return SEED * 1_000_003L + (scenario + "#" + round).hashCode();
  }

  static <T> T pick(Random random, List<T> from) {
    return from.get(random.nextInt(from.size()));
  }

  /**
   * Where round {@code round} of a scenario strikes: the scenario's own seeded order of the six
   * places, so that six rounds strike at every one and fewer at different ones.
   */
  static Where where(String scenario, int round) {
    List<Where> order = places(new Random(SEED * 1_000_003L + scenario.hashCode()));
    return order.get((round - 1) % order.size());
  }

  /** The six places in a random order. */
  static List<Where> places(Random random) {
    List<Where> order = new ArrayList<>(List.of(Where.values()));
    Collections.shuffle(order, random);
    return order;
  }

  /** Logs what a round is about to do, so that a failure can be replayed. */
  static void announce(String scenario, int round, long seed, String plan) {
    System.out.printf(
        Locale.ROOT,
        "GROUP-FAULTS %s round %d: %s (retsu.faults.seed=%d, round seed %d)%n",
        scenario,
        round,
        plan,
        SEED,
        seed);
  }

  /** Records a round's figures, then fails with every violation and how to replay it. */
  static void judge(String scenario, int round, String faults, GroupRecorder.Result result)
      throws IOException {
    String label = faults.replace(' ', '_');
    FaultInjectionIntegrationTest.record(
        scenario + ".residual-window", round, result.residualNanos() / 1e6, label);
    long checkAfter = 0;
    for (TermChecker.Aftermath a : result.aftermath()) {
      checkAfter = Math.max(checkAfter, a.checkAfterFaultNanos());
    }
    FaultInjectionIntegrationTest.record(
        scenario + ".check-after-fault", round, checkAfter / 1e6, label);
    System.out.printf(
        Locale.ROOT,
        "GROUP-FAULTS %s round %d faults=[%s] keys=%d struck-terms=%d residual-window=%.1fms"
            + " check-after-fault=%.1fms violations=%d%n",
        scenario,
        round,
        faults,
        result.results().size(),
        result.aftermath().size(),
        result.residualNanos() / 1e6,
        checkAfter / 1e6,
        result.violations().size());
    if (!result.violations().isEmpty()) {
      throw new AssertionError(
          String.format(
              Locale.ROOT,
              "%s round %d: %d violation(s) of \"no key has two acting owners\" (rerun with"
                  + " -Dretsu.faults.seed=%d -Dretsu.faults.rounds=%d); faults: %s%n  %s",
              scenario,
              round,
              result.violations().size(),
              SEED,
              Math.max(round, ROUNDS),
              faults,
              String.join("\n  ", result.violations())));
    }
  }
}
