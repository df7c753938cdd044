package dev.retsu.lock.internal.loop;

import dev.retsu.lock.FailurePolicy;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.TakeoverMode;
import dev.retsu.lock.internal.session.SessionOpener;
import dev.retsu.lock.internal.term.TermOptions;
import java.time.Duration;

/**
 * The validated, immutable settings of one {@code LeaderLoop}: the options its terms share with
 * every recipe, how its sessions are opened, and the loop's own knobs. Thread-safe.
 *
 * @param term the shared term options
 * @param spec how the loop's sessions are opened (the key, the settings, the bounds)
 * @param retryInterval the wait between POLL attempts
 * @param retryJitter the fraction that shortens a POLL wait at most
 * @param failurePolicy what a failed term does
 * @param maxBackoff the longest wait between failed terms under STEP_DOWN
 * @param takeover POLL or WAIT
 * @param waitTimeout the longest single wait of a WAIT standby
 */
public record LoopSettings(
    TermOptions term,
    SessionOpener.Spec spec,
    Duration retryInterval,
    double retryJitter,
    FailurePolicy failurePolicy,
    Duration maxBackoff,
    TakeoverMode takeover,
    Duration waitTimeout) {

  /** The key. */
  public LockKey key() {
    return spec.key();
  }

  /** The candidate. */
  public String candidateId() {
    return spec.candidateId();
  }

  /** The log prefix. */
  public String context() {
    return spec.context();
  }

  /** The settings a loop logs when it starts. */
  public String summary() {
    return "takeover "
        + takeover
        + ", retry "
        + retryInterval
        + ", refresh "
        + term.refreshInterval()
        + ", policy "
        + failurePolicy
        + ", "
        + term.bounds();
  }
}
