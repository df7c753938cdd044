package dev.retsu.lock;

/** What a {@link LeaderLoop} does when a term ends by failure (anything but a close). */
public enum FailurePolicy {
  /**
   * {@link LeaderLoop#run} ends by throwing {@link LeadershipLostException} to the caller, after
   * releasing the lock. The Retsu collector's behaviour: the process exits and its supervisor
   * restarts it, so no stale state outlives the term.
   */
  EXIT,
  /**
   * Release the lock and contend again after a backoff, doubling while terms keep failing. The
   * default: in an embedded library, one failed refresh must not leave a service where nobody
   * leads. A transaction-mode pooler stops the loop under this policy too.
   */
  STEP_DOWN
}
