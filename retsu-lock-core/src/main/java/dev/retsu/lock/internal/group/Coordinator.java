package dev.retsu.lock.internal.group;

import dev.retsu.lock.internal.TimeSource;
import java.util.BitSet;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A group member's rounds ({@code retsu-lock-group-<name>-coordinator}, daemon): every {@code
 * membershipInterval} (jittered by 10 %) it reads the membership on the first session, yields the
 * surplus over its fair share gracefully, and tries free keys up to its quota, spread over its
 * sessions; the decisions are {@link Rebalancer}'s, and {@link KeyPlacement} carries them out.
 * After a server restart, a member whose membership session was opened again plans with no fewer
 * members than it saw before for {@code heartbeatInterval + reconnectInterval +
 * membershipInterval}, and rebalances as soon as all its sessions are open. Not thread-safe: one
 * coordinator thread; {@link #nudge} from any.
 */
public final class Coordinator implements Runnable {

  private static final Logger LOG = LoggerFactory.getLogger(Coordinator.class);

  /** The least number of keys tried per round when this member is below its quota: 256. */
  static final int MIN_TRIES_PER_ROUND = 256;

  private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

  /** The gap between rounds while a change settles and this member is below its quota: 50 ms. */
  private static final long SWEEP_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

  /** How long after a membership change rounds come every {@link #SWEEP_NANOS}: 1 second. */
  private static final long SWEEP_WINDOW_NANOS = TimeUnit.SECONDS.toNanos(1);

  private final GroupCore core;
  private final List<? extends Slot> slots;
  private final Rebalancer rebalancer;
  private final KeyPlacement placement;
  private final TimeSource time;
  private final AtomicBoolean roundNow = new AtomicBoolean();
  private final AtomicBoolean keysLost = new AtomicBoolean();
  private volatile Thread thread;
  private volatile int members;
  private long lastSlot = -1;
  private long rejoiningUntil;
  private boolean rejoining;
  private volatile MemberWatch watch;
  private long changedAt = Long.MIN_VALUE / 2;

  /**
   * The coordinator of a member.
   *
   * @param core the group's shared state
   * @param slots the member's session slots, the membership one first
   */
  Coordinator(GroupCore core, List<? extends Slot> slots) {
    this.core = core;
    this.slots = slots;
    this.rebalancer = new Rebalancer(core.settings().keys().size());
    this.time = core.settings().term().time();
    this.placement = new KeyPlacement(core, slots, rebalancer);
  }

  /** Starts the coordinator's thread. */
  public void start() {
    Thread t = new Thread(this, "retsu-lock-group-" + core.settings().name() + "-coordinator");
    t.setDaemon(true);
    thread = t;
    t.start();
  }

  /** Stops the thread. */
  public void stop() {
    Thread t = thread;
    if (t != null) {
      t.interrupt();
    }
  }

  /** The members seen at the last membership read. */
  public int members() {
    return members;
  }

  /** The member's watch, told of each membership read. */
  void watch(MemberWatch w) {
    this.watch = w;
  }

  /** A member joined, left or is gone: a round now, whatever the sessions' state. */
  public void roundNow() {
    roundNow.set(true);
    Thread t = thread;
    if (t != null) {
      LockSupport.unpark(t);
    }
  }

  /**
   * A session of this member ended while the member lives (terminated, its connection cut): the
   * keys it held are free now. With the membership session still open, a round now sweeps the ring
   * on the member's other sessions, so those keys are owned again within one statement instead of
   * after the reconnect; the ended session is opened again as usual. Without the membership session
   * the member is gone for the others, whose watches start their own rounds.
   *
   * @param slot the slot whose session ended
   */
  void sessionEnded(Slot slot) {
    keysLost.set(true);
    if (slot.index() != 0 && slots.get(0).live() && !core.closing()) {
      roundNow();
    } else {
      nudge();
    }
  }

  /**
   * A session was opened or ended: look again now, and rebalance at once when every session is open
   * (after a server restart each member then takes its own share of the freed keys).
   */
  public void nudge() {
    if (slots.stream().allMatch(Slot::live)) {
      roundNow.set(true);
    }
    Thread t = thread;
    if (t != null) {
      LockSupport.unpark(t);
    }
  }

  @Override
  public void run() {
    long interval = core.settings().membershipInterval().toNanos();
    while (!core.closing()) {
      try {
        round();
      } catch (RuntimeException e) {
        LOG.warn("{} Rebalancing failed; trying again next round", core.settings().context(), e);
      }
      long jitter = (long) (interval * 0.1 * (ThreadLocalRandom.current().nextDouble() * 2 - 1));
      // Right after a change, keys may still be on their way to being free (a crashed member's
      // sessions end one after another): look again soon while this member is below its quota.
      boolean settling = time.nanoTime() - changedAt - SWEEP_WINDOW_NANOS < 0;
      long next = settling && below() ? Math.min(interval, SWEEP_NANOS) : interval;
      long until = time.nanoTime() + next + (next == interval ? jitter : 0);
      while (!core.closing() && time.nanoTime() - until < 0) {
        time.park(Math.min(until - time.nanoTime(), POLL_NANOS));
        if (Thread.interrupted() && core.closing()) {
          return;
        }
        if (roundNow.getAndSet(false)) {
          break;
        }
      }
    }
  }

  /** One round: read the members, yield the surplus, try keys up to the quota. */
  void round() {
    Slot first = slots.get(0);
    long[] seen = placement.await(first.members());
    long mine = first.membershipSlot();
    int rank = seen == null || mine < 0 ? -1 : rankOf(seen, mine);
    if (rank < 0) {
      return; // no membership view this round: keep what we hold
    }
    int planned = planned(seen.length, mine);
    members = seen.length;
    MemberWatch w = watch;
    if (w != null) {
      w.membership(seen, (int) mine);
    }
    if (rebalancer.membership(planned, rank)) {
      changedAt = time.nanoTime();
      LOG.info(
          "{} {} member(s){}; this one is rank {}, quota {} of {} keys",
          core.settings().context(),
          planned,
          planned != seen.length ? " (" + seen.length + " back after a reconnect)" : "",
          rank,
          rebalancer.quota(),
          core.settings().keys().size());
    }
    if (keysLost.getAndSet(false) || time.nanoTime() - changedAt - SWEEP_WINDOW_NANOS < 0) {
      // Keys a session of this member held are free (a sweep finds them wherever they are), or
      // the departed member's sessions may end one after another.
      rebalancer.sweepAgain();
    }
    BitSet held = core.heldSet();
    BitSet handedOff = core.handedOff(time.nanoTime());
    BitSet counted = (BitSet) held.clone();
    counted.andNot(handedOff); // a key another member yielded is held above the quota for now
    List<Integer> surplus = rebalancer.surplus(counted);
    if (!surplus.isEmpty()) {
      placement.yieldSurplus(surplus, members);
      return;
    }
    placement.takeHandedOff(handedOff, held);
    placement.takeUpToQuota(rebalancer.roundBudget(counted.cardinality(), MIN_TRIES_PER_ROUND));
  }

  private boolean below() {
    return core.heldSet().cardinality() < rebalancer.quota();
  }

  private static int rankOf(long[] seen, long mine) {
    for (int i = 0; i < seen.length; i++) {
      if (seen[i] == mine) {
        return i;
      }
    }
    return -1;
  }

  /** The members to plan with: no fewer than before while this member rejoins. */
  private int planned(int seen, long mine) {
    long at = time.nanoTime();
    if (mine != lastSlot) {
      if (lastSlot >= 0) {
        // Our membership session was opened again: the others may still be reconnecting. Wait for
        // them as long as they may take to notice the loss and reconnect, and one round more.
        rejoining = true;
        rejoiningUntil =
            at
                + core.settings().term().heartbeatInterval().toNanos()
                + core.settings().reconnectInterval().toNanos()
                + core.settings().membershipInterval().toNanos();
      }
      lastSlot = mine;
    }
    if (rejoining && at - rejoiningUntil >= 0) {
      rejoining = false;
    }
    return rebalancer.plannedMembers(seen, rejoining);
  }
}
