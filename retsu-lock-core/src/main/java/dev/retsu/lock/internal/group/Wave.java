package dev.retsu.lock.internal.group;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;

/**
 * The keys one round of a {@link Rebalancer} tries at once, one statement per session, all sent
 * before any answer is awaited: a chunk of the ring split into consecutive segments. What this
 * member misses of its quota is spread over its open sessions so that each is brought up to its
 * even share ({@code ceil(quota / sessions)}), the least loaded first; what is left over (sessions
 * are down) goes to the least loaded. The limits add up to no more than what is missing, so a wave
 * never takes the member above its quota. Sending the statements together takes over a departed
 * member's keys without waiting for one session's statement before the next is sent. Pure: no I/O,
 * no clock.
 *
 * @param chunk the keys, in ring order from the cursor
 * @param segments one per session that takes part, in chunk order
 */
record Wave(Rebalancer.Chunk chunk, List<Wave.Segment> segments) {

  private static final Wave NONE = new Wave(new Rebalancer.Chunk(List.of(), new int[0]), List.of());

  /**
   * One session's statement: a consecutive part of the wave's chunk, from {@code offset} on, and
   * the most grants it may take.
   *
   * @param session the session's position among the member's sessions
   * @param keys its keys
   * @param offset where its keys start within the wave's chunk
   * @param limit the most keys it may take
   */
  record Segment(int session, Rebalancer.Chunk keys, int offset, int limit) {}

  boolean isEmpty() {
    return segments.isEmpty();
  }

  /**
   * The next wave of {@code r}. The chunk holds up to {@code batchSize} keys per taking session
   * (and at most {@code budget}), split between them in proportion to their limits.
   *
   * @param r the member's decisions
   * @param held the keys held now
   * @param budget the most keys this round may still try
   * @param batchSize the most keys one statement tries
   * @param loads keys held per session, -1 for a session that is not open
   * @return the wave, empty when nothing is missing or no session is open
   */
  static Wave next(Rebalancer r, BitSet held, int budget, int batchSize, int[] loads) {
    int missing = r.quota() - held.cardinality();
    if (missing <= 0 || budget <= 0) {
      return NONE;
    }
    List<Integer> open = new ArrayList<>();
    for (int i = 0; i < loads.length; i++) {
      if (loads[i] >= 0) {
        open.add(i);
      }
    }
    if (open.isEmpty()) {
      return NONE;
    }
    open.sort((a, b) -> Integer.compare(loads[a], loads[b])); // stable: ties keep slot order
    int share = (r.quota() + loads.length - 1) / loads.length;
    int[] limits = new int[loads.length];
    int left = missing;
    for (int i : open) {
      limits[i] = Math.min(left, Math.max(0, share - loads[i]));
      left -= limits[i];
    }
    limits[open.get(0)] += left; // sessions are down: the least loaded takes the rest
    List<Integer> taking = open.stream().filter(i -> limits[i] > 0).toList();
    Rebalancer.Chunk chunk =
        r.nextChunk(held, (int) Math.min(budget, (long) batchSize * taking.size()));
    List<Segment> segments = new ArrayList<>();
    long total = missing; // the limits add up to what is missing
    long sum = 0;
    int from = 0;
    for (int j = 0; j < taking.size(); j++) {
      int i = taking.get(j);
      sum += limits[i];
      int to = j == taking.size() - 1 ? chunk.size() : (int) (chunk.size() * sum / total);
      if (to > from) {
        Rebalancer.Chunk part =
            new Rebalancer.Chunk(
                chunk.keys().subList(from, to), Arrays.copyOfRange(chunk.cursorAfter(), from, to));
        segments.add(new Segment(i, part, from, limits[i]));
      }
      from = Math.max(from, to);
    }
    return new Wave(chunk, segments);
  }

  /**
   * The end of this wave: moves {@code r}'s cursor to the first key of the chunk that no statement
   * tried (keys tried after it, and not granted, are tried again by the next wave: a try is
   * harmless).
   *
   * @param r the member's decisions
   * @param tried per segment, how many of its keys its statement tried ({@link Rebalancer#tried});
   *     0 for one that did not answer
   * @return how many keys of the chunk count as tried, 0 to its size
   */
  int finish(Rebalancer r, int[] tried) {
    int covered = chunk.size();
    for (int j = 0; j < segments.size(); j++) {
      Segment s = segments.get(j);
      if (tried[j] < s.keys().size()) {
        covered = Math.min(covered, s.offset() + Math.max(0, tried[j]));
      }
    }
    r.advance(chunk, covered);
    return covered;
  }
}
