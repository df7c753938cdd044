package dev.retsu.lock.internal.loop;

import dev.retsu.lock.FailurePolicy;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.TakeoverMode;
import dev.retsu.lock.internal.session.Notices;
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
 * @param preferred whether this candidate is preferred (its WAIT standby's session is marked, and
 *     it never yields to another preferred one)
 * @param takeoverDelay the wait before a term's first work when the previous term may not have
 *     ended gracefully (zero: off)
 */
public record LoopSettings(
    TermOptions term,
    SessionOpener.Spec spec,
    Duration retryInterval,
    double retryJitter,
    FailurePolicy failurePolicy,
    Duration maxBackoff,
    TakeoverMode takeover,
    Duration waitTimeout,
    boolean preferred,
    Duration takeoverDelay) {

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

  /** How a WAIT standby's waiting session is opened: marked when preferred. */
  public SessionOpener.Spec waitSpec() {
    if (!preferred) {
      return spec;
    }
    String name = Notices.PREFERRED_PREFIX + spec.candidateId();
    return new SessionOpener.Spec(
        spec.dataSource(),
        spec.key(),
        spec.candidateId(),
        spec.context(),
        name.length() > Notices.MAX_NAME ? name.substring(0, Notices.MAX_NAME) : name,
        spec.settings(),
        spec.roundTripTimeout(),
        spec.heartbeat(),
        spec.selfFenceAfter(),
        spec.time());
  }

  /** The settings a loop logs when it starts. */
  public String summary() {
    return "takeover "
        + takeover
        + (preferred ? " (preferred)" : "")
        + (takeoverDelay.isZero() ? "" : ", takeover delay " + takeoverDelay)
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
