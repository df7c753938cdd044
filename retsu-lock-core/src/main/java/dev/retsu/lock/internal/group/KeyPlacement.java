package dev.retsu.lock.internal.group;

import dev.retsu.lock.LockKey;
import dev.retsu.lock.internal.TimeSource;
import dev.retsu.lock.internal.term.TermState;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a {@link Coordinator}'s decisions reach the member's sessions: the surplus yielded by the
 * sessions that hold it; keys another member handed off tried on the least loaded session; the
 * sweep up to the quota in chunks, each statement giving the least loaded session at most its even
 * share, never a key this member yielded and cools down from. Every slot's answer is awaited within
 * a bound. Runs on the coordinator's thread only.
 */
final class KeyPlacement {

  /** The coordinator's logger: these lines are the coordinator's, as they always were. */
  private static final Logger LOG = LoggerFactory.getLogger(Coordinator.class);

  private final GroupCore core;
  private final List<? extends Slot> slots;
  private final Rebalancer rebalancer;
  private final TimeSource time;

  KeyPlacement(GroupCore core, List<? extends Slot> slots, Rebalancer rebalancer) {
    this.core = core;
    this.slots = slots;
    this.rebalancer = rebalancer;
    this.time = core.settings().term().time();
  }

  /** Yields keys over the quota, each from the session that holds it, and waits for the answers. */
  void yieldSurplus(List<Integer> surplus, int members) {
    Map<Slot, List<LockKey>> bySlot = new LinkedHashMap<>();
    for (int k : surplus) {
      TermState t = core.owned().get(core.settings().keys().get(k));
      Slot s = t == null ? null : slotOf(t);
      if (s != null) {
        bySlot.computeIfAbsent(s, x -> new ArrayList<>()).add(t.term().key());
      }
    }
    List<CompletableFuture<Integer>> done = new ArrayList<>();
    bySlot.forEach((s, keys) -> done.add(s.release(keys)));
    for (CompletableFuture<Integer> f : done) {
      Integer n = await(f);
      core.yielded(n == null ? 0 : n);
    }
    LOG.info(
        "{} Yielded {} key(s) to rebalance ({} members)",
        core.settings().context(),
        surplus.size(),
        members);
  }

  /** Tries the keys other members yielded and cool down from, whatever the quota. */
  void takeHandedOff(BitSet handedOff, BitSet held) {
    List<LockKey> keys = new ArrayList<>();
    long at = time.nanoTime();
    for (int i = handedOff.nextSetBit(0); i >= 0; i = handedOff.nextSetBit(i + 1)) {
      LockKey k = core.settings().keys().get(i);
      if (!held.get(i) && core.mayTake(k, at)) { // not the one this member yielded itself
        keys.add(k);
      }
    }
    Slot target = leastLoaded();
    if (!keys.isEmpty() && target != null) {
      await(target.tryKeys(keys, keys.size()));
    }
  }

  /**
   * A sweep of the whole ring after a change, a few hundred keys at rest (see Rebalancer): in
   * waves, each sending one statement to every session below its share before awaiting any.
   */
  void takeUpToQuota(int budget) {
    while (budget > 0 && !core.closing()) {
      int[] loads = new int[slots.size()];
      for (int i = 0; i < loads.length; i++) {
        loads[i] = slots.get(i).live() ? slots.get(i).heldCount() : -1;
      }
      Wave wave = Wave.next(rebalancer, core.heldSet(), budget, core.settings().batchSize(), loads);
      if (wave.isEmpty()) {
        return;
      }
      List<Wave.Segment> segments = wave.segments();
      List<List<LockKey>> keys = new ArrayList<>(segments.size());
      List<CompletableFuture<List<LockKey>>> answers = new ArrayList<>(segments.size());
      long at = time.nanoTime();
      for (Wave.Segment seg : segments) {
        List<LockKey> segKeys = new ArrayList<>(seg.keys().size());
        List<LockKey> wanted = new ArrayList<>(seg.keys().size());
        for (int k : seg.keys().keys()) {
          LockKey key = core.settings().keys().get(k);
          segKeys.add(key);
          if (core.mayTake(key, at)) {
            wanted.add(key); // not a key this member yielded and cools down from
          }
        }
        keys.add(segKeys);
        answers.add(
            wanted.isEmpty()
                ? CompletableFuture.completedFuture(List.of())
                : slots.get(seg.session()).tryKeys(wanted, seg.limit()));
      }
      long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(awaitBoundMillis());
      int[] tried = new int[segments.size()];
      boolean unanswered = false;
      for (int j = 0; j < segments.size(); j++) {
        List<LockKey> granted = await(answers.get(j), deadline);
        if (granted == null) {
          unanswered = true; // tried stays 0: the cursor stops before its keys
          continue;
        }
        Set<LockKey> got = new HashSet<>(granted);
        List<Integer> positions = new ArrayList<>(granted.size());
        List<LockKey> segKeys = keys.get(j);
        for (int p = 0; p < segKeys.size(); p++) {
          if (got.contains(segKeys.get(p))) {
            positions.add(p);
          }
        }
        Wave.Segment seg = segments.get(j);
        tried[j] = Rebalancer.tried(seg.keys(), positions, seg.limit());
      }
      int covered = wave.finish(rebalancer, tried);
      if (unanswered || covered == 0) {
        return;
      }
      budget -= covered;
    }
  }

  private Slot leastLoaded() {
    Slot best = null;
    int load = Integer.MAX_VALUE;
    for (Slot s : slots) {
      if (s.live() && s.heldCount() < load) {
        best = s;
        load = s.heldCount();
      }
    }
    return best;
  }

  private Slot slotOf(TermState t) {
    for (Slot s : slots) {
      if (s.runs(t)) {
        return s;
      }
    }
    return null;
  }

  /** Waits for a slot's answer, bounded; null on timeout or when closing. */
  <T> T await(CompletableFuture<T> f) {
    return await(f, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(awaitBoundMillis()));
  }

  /** The bound on a slot's answer: two round trips and a close. */
  private long awaitBoundMillis() {
    return core.settings().term().roundTripTimeout().toMillis() * 2
        + core.settings().term().closeTimeout().toMillis();
  }

  /**
   * Waits for a slot's answer until {@code deadline}; null on timeout. A real wait on real threads,
   * so the deadline is on the real clock ({@link System#nanoTime()}), as {@code Future.get} is.
   */
  private <T> T await(CompletableFuture<T> f, long deadline) {
    try {
      return f.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      if (!core.closing()) {
        Thread.currentThread().interrupt();
      }
      return null;
    } catch (ExecutionException | TimeoutException e) {
      LOG.debug("{} A session did not answer: {}", core.settings().context(), e.toString());
      return null;
    }
  }
}
