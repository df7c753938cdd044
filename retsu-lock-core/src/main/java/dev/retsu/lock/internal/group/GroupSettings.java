package dev.retsu.lock.internal.group;

import dev.retsu.lock.LockKey;
import dev.retsu.lock.internal.session.SessionOpener;
import dev.retsu.lock.internal.term.TermOptions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The validated, immutable settings of one {@code LeaderGroup}: the options its terms share with
 * every recipe, how its sessions are opened, and the group's own knobs. Single values are checked
 * on the builder, the rules that tie two values together here. Thread-safe.
 *
 * @param term the shared term options
 * @param spec how the group's sessions are opened (its membership key stands for the group in
 *     messages)
 * @param name the group's name
 * @param keys the keys, distinct, in the order every member shares
 * @param sessions sessions per member, before the cap at the number of keys
 * @param batchSize the most keys one locking statement tries
 * @param membershipInterval between membership reads and rebalances
 * @param reconnectInterval the wait before a lost session is opened again
 * @param memberWatchInterval between two looks at the previous member's slot (zero: no watch
 *     session, departures are seen at the next membership read)
 */
public record GroupSettings(
    TermOptions term,
    SessionOpener.Spec spec,
    String name,
    List<LockKey> keys,
    int sessions,
    int batchSize,
    Duration membershipInterval,
    Duration reconnectInterval,
    Duration memberWatchInterval) {

  /** Checks what ties the options together. */
  public GroupSettings {
    keys = List.copyOf(keys);
    Map<LockKey, Integer> seen = new HashMap<>();
    for (int i = 0; i < keys.size(); i++) {
      Integer before = seen.put(keys.get(i), i);
      if (before != null) {
        throw new IllegalArgumentException(
            "keys must be distinct, but " + keys.get(i) + " is at " + before + " and " + i);
      }
    }
    if (term.refreshTimeout().compareTo(term.selfFenceAfter()) >= 0) {
      throw new IllegalStateException(
          "refreshTimeout must be shorter than selfFenceAfter ("
              + term.selfFenceAfter()
              + "): a refresh holds its session's worker, so a longer one would fence every key on"
              + " the session, but was "
              + term.refreshTimeout());
    }
  }

  /** Sessions actually opened: never more than there are keys. */
  public int sessionCount() {
    return Math.min(sessions, keys.size());
  }

  /** The log prefix of the group. */
  public String context() {
    return "[group=" + name + ", candidate=" + term.candidateId() + "]";
  }

  /**
   * The keys {@code LockKey.named(namespace, "0")} to {@code named(namespace, count - 1)}.
   *
   * @param namespace the namespace
   * @param count how many
   * @return the keys
   */
  public static List<LockKey> partitions(String namespace, int count) {
    List<LockKey> keys = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      keys.add(LockKey.named(namespace, Integer.toString(i)));
    }
    return keys;
  }
}
