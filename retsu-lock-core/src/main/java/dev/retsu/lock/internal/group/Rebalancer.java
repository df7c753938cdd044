package dev.retsu.lock.internal.group;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;

/**
 * The fair-share decisions of one {@code LeaderGroup} member, without I/O or clocks, so they are
 * unit-tested on their own. Keys are indices into the group's key list, which every member must be
 * given in the same order.
 *
 * <ul>
 *   <li><b>Quota.</b> With {@code M} live members each holds at most {@code ceil(N / M)} keys. The
 *       quotas add up to at least {@code N}, so every key can be owned.
 *   <li><b>Preferred range.</b> Member of rank {@code r} (its place among the members' slots,
 *       ascending) prefers the keys from {@code floor(r * N / M)} on, in ring order: members that
 *       see the same membership try disjoint keys first, so they rarely contend.
 *   <li><b>Surplus.</b> A member above its quota yields the difference, keys outside its preferred
 *       range first (those are in the ranges the others try first), farthest from it first.
 *   <li><b>Chunks.</b> A member below its quota tries keys it does not hold in one statement per
 *       chunk that stops after {@code quota - held} grants (a {@code LIMIT} over the filtered
 *       keys), so it never takes more than its quota; a cursor walks the ring so that keys found
 *       held elsewhere are not tried again until the ring wraps. The cursor restarts at the
 *       preferred range whenever the membership changes. A round sends one such statement to each
 *       session below its even share at once ({@link Wave}), each with its own consecutive part of
 *       the chunk and its own limit, so a departed member's keys are taken over in the time of one
 *       statement, not one per session.
 *   <li><b>Rejoining.</b> A member whose membership session was opened again (the server restarted,
 *       or that session was ended) sees the others come back one by one, each after its own
 *       reconnect. For a short while it plans with no fewer members than it saw before ({@link
 *       #plannedMembers}): otherwise the first member back would see itself almost alone, take far
 *       more than its share of the keys the restart freed, and yield them again a round later.
 *   <li><b>Sweeps.</b> For three rounds after a change (the membership, or keys this member lost),
 *       and while a quarter of its quota is missing, a member below its quota tries every key it
 *       does not hold in that round, in chunks; otherwise at most {@link #budget} keys per round.
 * </ul>
 *
 * <p>Not thread-safe: one coordinator thread uses it.
 */
public final class Rebalancer {

  /**
   * Rounds that sweep after a change: more than one, because the change can be seen before all of
   * it happened (a crashed member's membership lock may go a moment before its other sessions).
   */
  public static final int SWEEP_ROUNDS = 3;

  private final int n;
  private int members = 1;
  private int rank;
  private int cursor;
  private int sweeps = SWEEP_ROUNDS;

  public Rebalancer(int keys) {
    if (keys < 1) {
      throw new IllegalArgumentException("keys must be at least 1, but was " + keys);
    }
    this.n = keys;
  }

  /** ceil(keys / members). */
  public static int quota(int keys, int members) {
    if (members < 1) {
      throw new IllegalArgumentException("members must be at least 1, but was " + members);
    }
    return (keys + members - 1) / members;
  }

  /** Where the preferred range of rank {@code rank} starts: floor(rank * keys / members). */
  public static int preferredStart(int keys, int members, int rank) {
    return (int) ((long) rank * keys / members);
  }

  /**
   * A new view of the membership; the cursor restarts at the preferred range when it changed.
   *
   * @param members live members, at least 1 (this one included)
   * @param rank this member's place among them, 0-based
   * @return true if the view changed
   */
  public boolean membership(int members, int rank) {
    if (members < 1 || rank < 0 || rank >= members) {
      throw new IllegalArgumentException(
          "rank must be within 0.."
              + (members - 1)
              + " of "
              + members
              + " members, but was "
              + rank);
    }
    if (members == this.members && rank == this.rank) {
      return false;
    }
    this.members = members;
    this.rank = rank;
    this.cursor = 0;
    this.sweeps = SWEEP_ROUNDS;
    return true;
  }

  /**
   * The member count to plan a round with: the members seen, or, while this member is rejoining
   * (its membership session was just opened again), no fewer than the view before, since the others
   * may not have reconnected yet. Quotas only spread the keys: planning with too many members
   * leaves keys free for a while (a member that really left is taken over once the rejoining ends),
   * never gives a key two owners.
   *
   * @param seen members in the membership read of this round, this one included
   * @param rejoining whether this member is within its rejoining window
   * @return the count to pass to {@link #membership}
   */
  public int plannedMembers(int seen, boolean rejoining) {
    return rejoining ? Math.max(seen, members) : seen;
  }

  /**
   * How many keys this round may try. For {@link #SWEEP_ROUNDS} rounds after a change (membership,
   * the start), for one round after {@link #sweepAgain} (keys lost), and while at least a quarter
   * of its quota is missing (a member that just joined), a member sweeps the whole ring, so keys
   * freed anywhere (a crashed member's whole range, surplus yielded by others) are found in one
   * round; otherwise at most {@link #budget}, so a member a few keys short at rest (the shortfall
   * is then below the number of members) costs a few hundred try-locks per round, not N.
   *
   * @param held keys held now
   * @param minTries the floor of the budget at rest
   * @return the most keys to try this round
   */
  public int roundBudget(int held, int minTries) {
    int shortfall = quota() - held;
    if (shortfall <= 0) {
      return 0;
    }
    int all = n - held;
    if (sweeps > 0 || 4L * shortfall >= quota()) {
      // After a change, or while a quarter of the quota is missing (a member that just joined):
      // at rest the shortfall is below the member count, so this never repeats in a large group.
      sweeps = Math.max(0, sweeps - 1);
      return all;
    }
    return Math.min(budget(shortfall, minTries), all);
  }

  /**
   * The most keys a member below its quota tries in one round: four times what it misses, at least
   * {@code minTries}, so a member short of a few keys finds free ones without trying every key each
   * round, and one short of many (after a crash) tries all it needs at once.
   */
  public static int budget(int shortfall, int minTries) {
    return shortfall <= 0 ? 0 : Math.max(4 * shortfall, minTries);
  }

  public int members() {
    return members;
  }

  public int rank() {
    return rank;
  }

  public int quota() {
    return quota(n, members);
  }

  /** The next round sweeps the ring too: what a change freed may still be on its way. */
  public void sweepAgain() {
    sweeps = Math.max(sweeps, 1);
  }

  private int start() {
    return preferredStart(n, members, rank);
  }

  private int end() {
    return preferredStart(n, members, rank + 1); // exclusive
  }

  private boolean preferred(int key) {
    return key >= start() && key < end();
  }

  /**
   * The keys to yield: {@code held - quota} of them, those outside the preferred range first and,
   * among those, the farthest (in ring order) from the range's start.
   *
   * @param held the keys held now
   * @return indices to release, possibly empty
   */
  public List<Integer> surplus(BitSet held) {
    int extra = held.cardinality() - quota();
    List<Integer> out = new ArrayList<>();
    if (extra <= 0) {
      return out;
    }
    int s = start();
    // Walk the ring backwards from just before the preferred start: farthest first.
    for (int step = 1; step <= n && out.size() < extra; step++) {
      int k = Math.floorMod(s - step, n);
      if (held.get(k) && !preferred(k)) {
        out.add(k);
      }
    }
    for (int step = n - 1; step >= 0 && out.size() < extra; step--) {
      int k = Math.floorMod(s + step, n);
      if (held.get(k) && preferred(k)) {
        out.add(k);
      }
    }
    return out;
  }

  /** Keys to try, in ring order from the cursor, and where the cursor stands after each. */
  public record Chunk(List<Integer> keys, int[] cursorAfter) {
    public boolean isEmpty() {
      return keys.isEmpty();
    }

    public int size() {
      return keys.size();
    }
  }

  /**
   * The next keys to try: at most {@code max} keys this member does not hold, from the cursor on,
   * walking the ring at most once. The statement that tries them stops after {@code quota - held}
   * grants, so a chunk may be longer than what is missing; {@link #advance} then moves the cursor
   * past the keys actually tried.
   *
   * @param held the keys held now
   * @param max the most keys in the chunk
   * @return the chunk, possibly empty
   */
  public Chunk nextChunk(BitSet held, int max) {
    List<Integer> keys = new ArrayList<>();
    List<Integer> after = new ArrayList<>();
    if (max <= 0 || held.cardinality() >= quota()) {
      return new Chunk(keys, new int[0]);
    }
    int s = start();
    int c = cursor;
    for (int walked = 0; walked < n && keys.size() < max; walked++) {
      int k = Math.floorMod(s + c, n);
      c = (c + 1) % n;
      if (!held.get(k)) {
        keys.add(k);
        after.add(c);
      }
    }
    return new Chunk(keys, after.stream().mapToInt(Integer::intValue).toArray());
  }

  /**
   * Moves the cursor past the first {@code tried} keys of a chunk: keys found held elsewhere are
   * not tried again until the ring wraps.
   *
   * @param chunk the chunk from {@link #nextChunk}
   * @param tried how many of its keys the statement tried, 1 to its size
   */
  public void advance(Chunk chunk, int tried) {
    if (tried > 0) {
      cursor = chunk.cursorAfter()[Math.min(tried, chunk.size()) - 1];
    }
  }

  /**
   * How many keys of a chunk a statement tried that stopped after {@code limit} grants.
   *
   * @param chunk the chunk
   * @param grantedPositions positions (0-based, ascending) of the granted keys within the chunk
   * @param limit the grant limit the statement had
   * @return the count tried
   */
  public static int tried(Chunk chunk, List<Integer> grantedPositions, int limit) {
    if (grantedPositions.size() >= limit && !grantedPositions.isEmpty()) {
      return grantedPositions.get(grantedPositions.size() - 1) + 1;
    }
    return chunk.size();
  }
}
