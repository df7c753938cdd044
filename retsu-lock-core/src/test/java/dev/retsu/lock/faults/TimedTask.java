package dev.retsu.lock.faults;

import dev.retsu.lock.LeaderContext;
import dev.retsu.lock.faults.FaultCandidate.Action;
import dev.retsu.lock.faults.FaultCandidate.Arm;
import dev.retsu.lock.faults.FaultCandidate.Phase;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Random;

/**
 * The fault suite's leader work, one refresh of one key, for a loop's candidate ({@link
 * FaultCandidate}) and for a group's members ({@link GroupRecorder}) alike: it takes time like real
 * leader work. It draws, from a seeded {@link Random}, a duration spent before {@link
 * LeaderContext#ensureLeader()} and one spent after it until the effect the check guards (work
 * outside the database: here a sleep). {@code CHECK} is stamped right after the check passed (from
 * here the candidate acts), {@code EFFECT} right after the effect (here it stops acting).
 *
 * <p>Modes: {@code PLAIN} (no database work), {@code TX} (the refresh runs inside a transaction on
 * {@link LeaderContext#connection()}: {@code setAutoCommit(false)}, a statement, the wait, the
 * check, the wait, the effect, {@code commit()}), {@code MIXED} (each refresh draws one of the
 * two).
 *
 * <p>An armed phase ({@link Arm}) is where a fault is to land: {@code PRE} (before the check),
 * {@code POST} (after the check, before the effect), {@code TX} (like {@code PRE}, inside an open
 * transaction even in {@code PLAIN} mode), {@code BETWEEN} (the task returned). At the phase the
 * task stamps {@code PHASE}, does the armed action and makes the phase last at least the arm's
 * linger, so that a fault injected on seeing {@code PHASE} lands inside it. ({@code CLOSE} is the
 * caller's: it lies in a listener, not in the task.)
 */
final class TimedTask {

  /** Where the task's moments are stamped. */
  interface Stamps {
    /** Right after {@code ensureLeader()} passed. */
    void check(LeaderContext ctx);

    /** Right after the effect. */
    void effect(LeaderContext ctx);

    /** The armed phase begins. */
    void phase(Phase phase, LeaderContext ctx);

    /** User code just ran the armed user SQL ({@code UNLOCK_ALL} or a user-SQL action). */
    void unlocked(LeaderContext ctx);
  }

  /**
   * How the refreshes take time.
   *
   * @param minMs the shortest half (before or after the check)
   * @param maxMs the longest half
   * @param mode PLAIN, TX or MIXED
   */
  record Profile(long minMs, long maxMs, String mode) {}

  private TimedTask() {}

  /**
   * Runs one refresh.
   *
   * @param ctx the term's context
   * @param random the draws of durations and of MIXED's transactions
   * @param profile how long each half takes
   * @param arm the armed phase this refresh took, or null
   * @param stamps where the moments go
   * @throws Exception when the check fails, the armed action throws, or the wait is interrupted
   */
  static void refresh(LeaderContext ctx, Random random, Profile profile, Arm arm, Stamps stamps)
      throws Exception {
    long before = draw(random, profile.minMs(), profile.maxMs());
    long after = draw(random, profile.minMs(), profile.maxMs());
    boolean mixedTx = random.nextBoolean();
    Phase phase = arm == null ? null : arm.phase();
    String mode = profile.mode();
    boolean tx = phase == Phase.TX || mode.equals("TX") || (mode.equals("MIXED") && mixedTx);
    Connection c = tx ? ctx.connection() : null;
    boolean committed = false;
    try {
      if (tx) {
        c.setAutoCommit(false);
        try (Statement s = c.createStatement()) {
          s.execute("SELECT now()"); // the transaction is open from here: idle in transaction
        }
      }
      if (phase == Phase.PRE || phase == Phase.TX) {
        before = atPhase(arm, ctx, before, stamps);
      }
      Thread.sleep(before);
      ctx.ensureLeader();
      stamps.check(ctx);
      if (phase == Phase.POST) {
        after = atPhase(arm, ctx, after, stamps);
      }
      Thread.sleep(after); // the effect: work outside the database that the check guards
      stamps.effect(ctx);
      if (tx) {
        c.commit();
        committed = true;
      }
    } finally {
      if (tx) {
        restoreAutoCommit(c, committed);
      }
    }
    if (phase == Phase.BETWEEN) {
      stamps.phase(Phase.BETWEEN, ctx); // the term now waits for its next refresh
    }
  }

  /** Stamps PHASE, does the armed action, and returns how long the phase's wait is to last. */
  private static long atPhase(Arm arm, LeaderContext ctx, long drawn, Stamps stamps)
      throws SQLException, InterruptedException {
    stamps.phase(arm.phase(), ctx);
    switch (arm.action()) {
      case THROW -> throw new IllegalStateException("told to throw");
      case HANG -> Thread.sleep(java.time.Duration.ofHours(1).toMillis());
      case UNLOCK_ALL -> {
        try (Statement s = ctx.connection().createStatement()) {
          s.execute("SELECT pg_advisory_unlock_all()");
        }
        stamps.unlocked(ctx);
      }
      case UNLOCK_FUNCTION, UNLOCK_PREPARED, UNLOCK_ESCAPED, RESET_ALL, RESET_FUNCTION -> {
        userSql(ctx, arm.action());
        stamps.unlocked(ctx);
        keepWorking(ctx, arm.lingerMs(), stamps);
        return 0;
      }
      default -> {
        // NONE: the fault comes from outside; IDLE: the wait below is the fault
      }
    }
    return Math.max(drawn, arm.lingerMs());
  }

  /** The functions the user-SQL actions call; the suite creates them before the candidates run. */
  static final String FUNCTIONS =
      "CREATE OR REPLACE FUNCTION retsu_test_release(k bigint) RETURNS boolean LANGUAGE sql AS"
          + " 'SELECT pg_advisory_unlock(k)'; CREATE OR REPLACE FUNCTION retsu_test_tidy()"
          + " RETURNS void LANGUAGE sql AS 'RESET ALL'";

  /**
   * User SQL on the key's own session whose text at that moment does not say it releases the key
   * (or resets the session): a function, a statement prepared (and checked) before it runs, an
   * escaped name; or plain {@code RESET ALL}.
   */
  private static void userSql(LeaderContext ctx, Action action) throws SQLException {
    long key = ctx.term().key().value();
    Connection c = ctx.connection();
    switch (action) {
      case UNLOCK_PREPARED -> {
        try (java.sql.PreparedStatement ps = c.prepareStatement("SELECT pg_advisory_unlock(?)")) {
          ps.setLong(1, key);
          ctx.ensureLeader(); // prepared, not run: the key is still held
          ps.execute();
        }
      }
      case UNLOCK_FUNCTION -> run(c, "SELECT retsu_test_release(" + key + "::int8)");
      case UNLOCK_ESCAPED -> run(c, "SELECT U&\"pg_advisory_\\0075nlock\"(" + key + "::int8)");
      case RESET_ALL -> run(c, "RESET ALL");
      case RESET_FUNCTION -> run(c, "SELECT retsu_test_tidy()");
      default -> throw new IllegalArgumentException("not a user-SQL action: " + action);
    }
  }

  private static void run(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  /**
   * A task that never stops using its session: for {@code lingerMs}, a statement, a check (stamped
   * CHECK), 20 ms, and again. It stops by throwing when the term ends under it.
   */
  private static void keepWorking(LeaderContext ctx, long lingerMs, Stamps stamps)
      throws SQLException, InterruptedException {
    long until = System.nanoTime() + lingerMs * 1_000_000L;
    while (System.nanoTime() < until) {
      run(ctx.connection(), "SELECT 1");
      ctx.ensureLeader();
      stamps.check(ctx);
      Thread.sleep(20);
    }
  }

  private static void restoreAutoCommit(Connection c, boolean committed) {
    try {
      if (!committed) {
        c.rollback();
      }
      c.setAutoCommit(true);
    } catch (SQLException e) {
      // the session is gone or the term is over; the loop or group finds out on its own
    }
  }

  private static long draw(Random random, long minMs, long maxMs) {
    return minMs + (maxMs > minMs ? (long) (random.nextDouble() * (maxMs - minMs + 1)) : 0);
  }

  /** Makes a phase outside the task (inside close()) last; keeps an interrupt. */
  static void linger(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
