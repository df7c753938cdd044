package dev.retsu.lock.spring.boot;

import dev.retsu.lock.LeaderContext;

/**
 * Which leaders' terms the current thread works for: set while a leader task or a
 * {@code @LeaderOnly} method runs, read by {@link LeaderDataSource}. A small stack per thread, so
 * that work for one leader may call work for another.
 */
final class TermBinding {

  /** Undoes one {@link #bind}; never throws. */
  interface Handle extends AutoCloseable {
    @Override
    void close();
  }

  private static final ThreadLocal<TermBinding> CURRENT = new ThreadLocal<>();

  private final RetsuLeader leader;
  private final LeaderContext context;
  private final TermBinding previous;

  private TermBinding(RetsuLeader leader, LeaderContext context, TermBinding previous) {
    this.leader = leader;
    this.context = context;
    this.previous = previous;
  }

  /** The context bound on this thread for the leader, or null. */
  static LeaderContext get(RetsuLeader leader) {
    for (TermBinding b = CURRENT.get(); b != null; b = b.previous) {
      if (b.leader == leader) {
        return b.context;
      }
    }
    return null;
  }

  /** Binds; the returned handle unbinds (always in a finally block). */
  static Handle bind(RetsuLeader leader, LeaderContext context) {
    TermBinding previous = CURRENT.get();
    CURRENT.set(new TermBinding(leader, context, previous));
    return () -> {
      if (previous == null) {
        CURRENT.remove();
      } else {
        CURRENT.set(previous);
      }
    };
  }
}
