package dev.retsu.lock.micrometer.internal;

import dev.retsu.lock.micrometer.QueueState;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.PriorityQueue;

/**
 * Applies a series budget to a list of queues: keeps the {@code budget} queues with the largest
 * backlog (ties broken by name, ascending, so the choice never depends on input order) and sums the
 * rest into one overflow row. Runs in O(n log budget). Stateless; thread-safe.
 */
public final class QueueFolding {

  /** Largest backlog first, then name ascending. */
  public static final Comparator<QueueState> ORDER =
      Comparator.comparingLong(QueueState::backlog).reversed().thenComparing(QueueState::name);

  private QueueFolding() {}

  /**
   * Folds queues past a budget.
   *
   * @param queues the queues, names unique
   * @param budget how many queues keep their own series; not negative
   * @return the kept queues in {@link #ORDER}, and the overflow
   */
  public static Result fold(List<QueueState> queues, int budget) {
    if (queues.size() <= budget) {
      List<QueueState> kept = new ArrayList<>(queues);
      kept.sort(ORDER);
      return new Result(Collections.unmodifiableList(kept), 0, 0, 0, 0, 0, 0);
    }
    // A heap of the kept queues whose head is the one that would be folded first. Each backlog is
    // computed once, and most queues are folded after one comparison of longs with the head.
    PriorityQueue<Entry> kept = new PriorityQueue<>(Math.max(1, budget), Entry::compareFoldFirst);
    Overflow overflow = new Overflow();
    for (QueueState q : queues) {
      Entry e = null;
      if (kept.size() < budget) {
        kept.add(new Entry(q));
        continue;
      }
      if (budget > 0) {
        Entry head = kept.peek();
        long backlog = q.backlog();
        if (backlog > head.backlog
            || (backlog == head.backlog && q.name().compareTo(head.queue.name()) < 0)) {
          e = new Entry(q, backlog);
        }
      }
      if (e == null) {
        overflow.add(q);
      } else {
        overflow.add(kept.poll().queue);
        kept.add(e);
      }
    }
    List<QueueState> sorted = new ArrayList<>(kept.size());
    for (Entry e : kept) {
      sorted.add(e.queue);
    }
    sorted.sort(ORDER);
    return new Result(
        Collections.unmodifiableList(sorted),
        overflow.count,
        overflow.ready,
        overflow.inFlight,
        overflow.scheduled,
        overflow.dead,
        overflow.oldestReadyAgeSeconds);
  }

  /** A kept queue with its backlog computed once. */
  private static final class Entry {
    final QueueState queue;
    final long backlog;

    Entry(QueueState queue) {
      this(queue, queue.backlog());
    }

    Entry(QueueState queue, long backlog) {
      this.queue = queue;
      this.backlog = backlog;
    }

    /** Heap order: smallest backlog first, then the larger name (the reverse of {@link #ORDER}). */
    static int compareFoldFirst(Entry a, Entry b) {
      int c = Long.compare(a.backlog, b.backlog);
      return c != 0 ? c : b.queue.name().compareTo(a.queue.name());
    }
  }

  /**
   * The outcome of {@link #fold}.
   *
   * @param kept queues that keep their own series, largest backlog first
   * @param folded how many queues were folded into the overflow row; 0 means there is none
   * @param ready sum over the folded queues, capped at {@link Long#MAX_VALUE}
   * @param inFlight sum over the folded queues, capped
   * @param scheduled sum over the folded queues, capped
   * @param dead sum over the folded queues, capped
   * @param oldestReadyAgeSeconds the largest age among the folded queues
   */
  public record Result(
      List<QueueState> kept,
      int folded,
      long ready,
      long inFlight,
      long scheduled,
      long dead,
      double oldestReadyAgeSeconds) {}

  private static final class Overflow {
    int count;
    long ready;
    long inFlight;
    long scheduled;
    long dead;
    double oldestReadyAgeSeconds;

    void add(QueueState q) {
      count++;
      ready = add(ready, q.ready());
      inFlight = add(inFlight, q.inFlight());
      scheduled = add(scheduled, q.scheduled());
      dead = add(dead, q.dead());
      oldestReadyAgeSeconds = Math.max(oldestReadyAgeSeconds, q.oldestReadyAgeSeconds());
    }

    private static long add(long a, long b) {
      long sum = a + b;
      return sum < 0 ? Long.MAX_VALUE : sum;
    }
  }
}
