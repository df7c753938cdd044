package dev.retsu.lock.internal.group;

import dev.retsu.lock.LockKey;
import dev.retsu.lock.internal.term.TermState;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * What a {@link Coordinator} and its {@link KeyPlacement} ask of one of the member's sessions.
 * {@link SessionSlot} is the one implementation; the interface is here so that the rounds'
 * decisions (whom to ask, for which keys, with which limit, how long to wait) are tested on stub
 * slots, without a database. Thread-safe, as {@link SessionSlot} is.
 */
interface Slot {

  /** The slot's position; 0 holds the membership. */
  int index();

  /** Whether a session is open now (between sessions a job is skipped). */
  boolean live();

  /** Keys held on the live session. */
  int heldCount();

  /** This member's membership slot, or -1. */
  int membershipSlot();

  /** Whether the live session runs {@code term}. */
  boolean runs(TermState term);

  /** Tries keys on this session; completes with the keys whose terms started. */
  CompletableFuture<List<LockKey>> tryKeys(List<LockKey> keys, int limit);

  /** Releases keys gracefully; completes with how many. */
  CompletableFuture<Integer> release(List<LockKey> keys);

  /** Reads the group's members (slot 0): slots ascending; null when the session is gone. */
  CompletableFuture<long[]> members();
}
