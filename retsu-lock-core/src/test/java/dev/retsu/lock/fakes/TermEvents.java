package dev.retsu.lock.fakes;

import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LeaderTask;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import dev.retsu.lock.testing.TermChecker;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.LockSupport;

/**
 * An in-process candidate's events in {@link TermChecker}'s form (the same as {@link
 * HandOverCandidate}'s), and the task that checks, works 2 ms and returns.
 */
public final class TermEvents implements LeaderListener {

  public final String member;
  public final List<TermChecker.Event> events = new CopyOnWriteArrayList<>();
  public final List<Term> acquired = new CopyOnWriteArrayList<>();
  public final List<Instant> acquiredAt = new CopyOnWriteArrayList<>();
  public final List<LossReason> lost = new CopyOnWriteArrayList<>();

  public TermEvents(String member) {
    this.member = member;
  }

  private void add(String kind, Object... fields) {
    List<String> f = new ArrayList<>();
    for (Object o : fields) {
      f.add(String.valueOf(o));
    }
    events.add(new TermChecker.Event(System.nanoTime(), member, kind, f));
  }

  @Override
  public void onAcquired(Term term) {
    acquiredAt.add(Instant.now());
    acquired.add(term);
    add("ACQUIRED", term.number(), term.fencingToken(), term.backendPid());
  }

  @Override
  public void onLost(Term term, LossReason reason, Throwable cause) {
    lost.add(reason);
    add("LOST", term.number(), reason);
  }

  /** The task: check, work 2 ms, return. */
  public LeaderTask task() {
    return ctx -> {
      ctx.ensureLeader();
      add("CHECK", ctx.term().number(), ctx.fencingToken());
      LockSupport.parkNanos(2_000_000L);
      add("EFFECT", ctx.term().number(), ctx.fencingToken());
    };
  }

  /** The monotonic time of the first event of a kind after {@code from}, or -1. */
  public long first(String kind, long from) {
    for (TermChecker.Event e : events) {
      if (e.kind().equals(kind) && e.nanos() - from >= 0) {
        return e.nanos();
      }
    }
    return -1;
  }

  /** The monotonic time of the last event of a kind, or -1. */
  public long last(String kind) {
    long at = -1;
    for (TermChecker.Event e : events) {
      if (e.kind().equals(kind)) {
        at = e.nanos();
      }
    }
    return at;
  }

  public static Duration between(long fromNanos, long toNanos) {
    return Duration.ofNanos(toNanos - fromNanos);
  }
}
