package dev.retsu.lock.spring.boot;

import dev.retsu.lock.LeaderContext;

/**
 * Which terms the current thread works for: set while a leader's (or a group key's) task or a
 * {@code @LeaderOnly} method runs, read by {@link LeaderDataSource}. A small stack per thread, so
 * that work for one leader may call work for another. The owner is the {@link RetsuLeader} or the
 * {@link RetsuLeaderGroup} whose view must find the term.
 */
final class TermBinding {

  /** Undoes one {@link #bind}; never throws. */
  interface Handle extends AutoCloseable {
    @Override
    void close();
  }

  private static final ThreadLocal<TermBinding> CURRENT = new ThreadLocal<>();

  private final Object owner;
  private final LeaderContext context;
  private final TermBinding previous;

  private TermBinding(Object owner, LeaderContext context, TermBinding previous) {
    this.owner = owner;
    this.context = context;
    this.previous = previous;
  }

  /** The context bound on this thread for the owner, or null. */
  static LeaderContext get(Object owner) {
    for (TermBinding b = CURRENT.get(); b != null; b = b.previous) {
      if (b.owner == owner) {
        return b.context;
      }
    }
    return null;
  }

  /** Binds; the returned handle unbinds (always in a finally block). */
  static Handle bind(Object owner, LeaderContext context) {
    TermBinding previous = CURRENT.get();
    CURRENT.set(new TermBinding(owner, context, previous));
    return () -> {
      if (previous == null) {
        CURRENT.remove();
      } else {
        CURRENT.set(previous);
      }
    };
  }
}
