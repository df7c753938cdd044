package dev.retsu.lock.internal.group;

import dev.retsu.lock.LeaderTask;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.internal.term.TermListeners;
import dev.retsu.lock.internal.term.TermState;
import java.util.BitSet;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * What a group's sessions and its coordinator share: the keys and their order, the live term of
 * each key this member leads, each key's term numbers, the counters the facade reports, the
 * listeners, the task, and whether the group is closing. Thread-safe.
 */
public final class GroupCore {

  private final GroupSettings settings;
  private final TermListeners listeners;
  private final Membership membership;
  private final Map<LockKey, Integer> index = new HashMap<>();
  private final AtomicLongArray termNumbers;
  private final AtomicLongArray cooldownUntil;
  private final AtomicLongArray handOffUntil;
  private final AtomicLongArray endedAt;
  private final Map<LockKey, TermState> owned = new ConcurrentHashMap<>();
  private final AtomicBoolean closing = new AtomicBoolean();
  private final AtomicLong rebalances = new AtomicLong();
  private final AtomicLong acquisitions = new AtomicLong();
  private final AtomicLong losses = new AtomicLong();
  private volatile LeaderTask task;

  /**
   * The shared state of one group.
   *
   * @param settings the group's settings
   */
  public GroupCore(GroupSettings settings) {
    this.settings = settings;
    this.listeners = new TermListeners(settings.term().listeners(), settings.context());
    this.membership = new Membership(settings.name());
    for (int i = 0; i < settings.keys().size(); i++) {
      index.put(settings.keys().get(i), i);
    }
    this.termNumbers = new AtomicLongArray(settings.keys().size());
    this.cooldownUntil = new AtomicLongArray(settings.keys().size());
    this.handOffUntil = new AtomicLongArray(settings.keys().size());
    this.endedAt = new AtomicLongArray(settings.keys().size());
  }

  /** The settings. */
  public GroupSettings settings() {
    return settings;
  }

  /** The listeners. */
  public TermListeners listeners() {
    return listeners;
  }

  /** The membership. */
  public Membership membership() {
    return membership;
  }

  /** The task, once started. */
  public LeaderTask task() {
    return task;
  }

  /** Sets the task at start. */
  public void task(LeaderTask task) {
    this.task = task;
  }

  /** Whether the group is closing. */
  public boolean closing() {
    return closing.get();
  }

  /** Marks the group closing; true for the one caller that did. */
  public boolean startClosing() {
    return closing.compareAndSet(false, true);
  }

  /** Whether a key is one of the group's. */
  public boolean hasKey(LockKey key) {
    return index.containsKey(key);
  }

  /** A key's position in the group's order. */
  public int indexOf(LockKey key) {
    return index.get(key);
  }

  /** The next term number of a key. */
  long nextTermNumber(LockKey key) {
    return termNumbers.incrementAndGet(index.get(key));
  }

  /** This member does not take {@code key} again before {@code untilNanos} (a yield). */
  public void coolDown(LockKey key, long untilNanos) {
    cooldownUntil.set(index.get(key), untilNanos);
  }

  /** Whether this member may take the key at {@code nowNanos}. */
  boolean mayTake(LockKey key, long nowNanos) {
    long until = cooldownUntil.get(index.get(key));
    return until == 0 || nowNanos - until >= 0;
  }

  /**
   * Another member yielded the key at position {@code index} and cools down from it until {@code
   * untilNanos}: until then this member takes it even above its quota and does not count it as
   * surplus, so that a yielded key is not left unowned while the group is balanced. A key this
   * member holds, or held until less than a {@code membershipInterval} ago, was not the sender's to
   * yield: no window, so a notice can neither keep this member from counting (and yielding) a key
   * it holds above its share, nor make it take back at once a key it just yielded to a member below
   * its share (which takes it within that interval).
   *
   * @param index the key's position
   * @param nowNanos now
   * @param untilNanos the window's end
   * @return false when the notice was ignored (no such key, or this member held it)
   */
  boolean handOff(int index, long nowNanos, long untilNanos) {
    if (index < 0 || index >= handOffUntil.length() || heldSet().get(index)) {
      return false;
    }
    long ended = endedAt.get(index);
    if (ended != 0 && nowNanos - ended < settings.membershipInterval().toNanos()) {
      return false;
    }
    handOffUntil.set(index, untilNanos);
    return true;
  }

  /** The positions of keys handed off by another member and still in their window. */
  BitSet handedOff(long nowNanos) {
    BitSet out = new BitSet(handOffUntil.length());
    for (int i = 0; i < handOffUntil.length(); i++) {
      long until = handOffUntil.get(i);
      if (until != 0 && nowNanos - until < 0) {
        out.set(i);
      }
    }
    return out;
  }

  /** The live terms of this member, by key. */
  public Map<LockKey, TermState> owned() {
    return owned;
  }

  /** The keys this member's live terms hold, as positions. */
  BitSet heldSet() {
    BitSet held = new BitSet(settings.keys().size());
    for (TermState t : owned.values()) {
      if (!t.ended()) {
        held.set(index.get(t.term().key()));
      }
    }
    return held;
  }

  void termStarted(TermState t) {
    owned.put(t.term().key(), t);
    acquisitions.incrementAndGet();
  }

  void termEnded(TermState t) {
    long now = settings.term().time().nanoTime();
    endedAt.set(index.get(t.term().key()), now == 0 ? 1 : now);
    if (owned.remove(t.term().key(), t)) {
      losses.incrementAndGet();
    }
  }

  void yielded(int keys) {
    rebalances.addAndGet(keys);
  }

  /** Keys yielded to rebalance, since start. */
  public long rebalances() {
    return rebalances.get();
  }

  /** Terms started, since start. */
  public long acquisitions() {
    return acquisitions.get();
  }

  /** Terms ended, since start. */
  public long losses() {
    return losses.get();
  }
}
