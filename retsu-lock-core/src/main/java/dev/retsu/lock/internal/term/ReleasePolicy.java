package dev.retsu.lock.internal.term;

import dev.retsu.lock.LossReason;

/** How a finished term's key is released: the one thing the recipes do differently. */
public enum ReleasePolicy {
  /**
   * The session is the term's alone ({@code LeaderLoop}, invariant 3): ending the term ends the
   * session, which releases the key at once; a refresh that ran past its timeout has its session
   * aborted at once.
   */
  END_SESSION,

  /**
   * The session holds many keys ({@code LeaderGroup}): a term that ended gracefully has its key
   * unlocked on the session, by the worker once no refresh of it runs; a term whose key is gone
   * already (found missing, its session lost) unlocks nothing.
   */
  UNLOCK_KEY;

  /** Whether a term that ended for {@code why} still holds its key, so must unlock it. */
  boolean unlocks(LossReason why) {
    return why == LossReason.CLOSED
        || why == LossReason.YIELDED
        || why == LossReason.REFRESH_FAILED
        || why == LossReason.REFRESH_TIMED_OUT;
  }
}
