package dev.retsu.lock.internal.term;

import dev.retsu.lock.LockKey;
import dev.retsu.lock.internal.session.Session;
import java.util.Map;
import java.util.function.BooleanSupplier;

/**
 * What the parts of one {@link SessionWorker} share, made once by the worker and handed to each:
 * the session and its live terms, the terms' options and listeners, the release policy, the recipe,
 * the thread that runs the schedule and the wakeup that cuts its idle wait short.
 *
 * @param session the session, holding nothing or its first keys
 * @param options the terms' options
 * @param listeners who hears the terms
 * @param policy how a term's key is released
 * @param owner what the recipe hears
 * @param closing whether the recipe is closing
 * @param terms the live terms of the session, by key
 * @param task the worker's thread and what runs on it
 * @param wakeup the idle wait's wakeup
 */
record WorkerParts(
    Session session,
    TermOptions options,
    TermListeners listeners,
    ReleasePolicy policy,
    SessionWorker.Owner owner,
    BooleanSupplier closing,
    Map<LockKey, TermState> terms,
    RunningTask task,
    Wakeup wakeup) {

  /** The log prefix of the session. */
  String context() {
    return session.id().context();
  }
}
