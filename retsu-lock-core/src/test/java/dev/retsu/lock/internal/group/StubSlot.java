package dev.retsu.lock.internal.group;

import dev.retsu.lock.LockKey;
import dev.retsu.lock.internal.term.TermState;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * A member's session slot without a session: it answers the coordinator's jobs at once from what
 * the test set (the members, the keys free to take) and writes each statement it was sent to a log
 * its fixture shares between the slots, in the order they were sent.
 */
final class StubSlot implements Slot {

  /** One locking statement a slot was sent. */
  record Try(int slot, List<LockKey> keys, int limit) {}

  private final int index;
  private final List<Try> log;

  /** Whether a session is open. */
  volatile boolean live = true;

  /** Keys the live session holds. */
  volatile int held;

  /** The membership slot (slot 0). */
  volatile int membershipSlot = -1;

  /** What a membership read answers: null when the session is gone. */
  volatile long[] members;

  /** Keys nobody holds: a try takes them, up to its limit. */
  final Set<LockKey> free = new LinkedHashSet<>();

  /** When false, a try is never answered (a session stuck in a statement). */
  volatile boolean answers = true;

  /** Releases asked of this slot. */
  final List<List<LockKey>> released = new ArrayList<>();

  StubSlot(int index, List<Try> log) {
    this.index = index;
    this.log = log;
  }

  @Override
  public int index() {
    return index;
  }

  @Override
  public boolean live() {
    return live;
  }

  @Override
  public int heldCount() {
    return held;
  }

  @Override
  public int membershipSlot() {
    return membershipSlot;
  }

  @Override
  public boolean runs(TermState term) {
    return false;
  }

  @Override
  public CompletableFuture<List<LockKey>> tryKeys(List<LockKey> keys, int limit) {
    log.add(new Try(index, List.copyOf(keys), limit));
    if (!answers) {
      return new CompletableFuture<>();
    }
    List<LockKey> granted = new ArrayList<>();
    for (LockKey k : keys) {
      if (granted.size() < limit && free.remove(k)) {
        granted.add(k);
      }
    }
    held += granted.size();
    return CompletableFuture.completedFuture(granted);
  }

  @Override
  public CompletableFuture<Integer> release(List<LockKey> keys) {
    released.add(List.copyOf(keys));
    return CompletableFuture.completedFuture(keys.size());
  }

  @Override
  public CompletableFuture<long[]> members() {
    return CompletableFuture.completedFuture(members);
  }
}
