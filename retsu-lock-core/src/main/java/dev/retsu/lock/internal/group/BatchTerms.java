package dev.retsu.lock.internal.group;

import dev.retsu.lock.FencingToken;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import dev.retsu.lock.UnsafeSessionException;
import dev.retsu.lock.internal.Diagnostics;
import dev.retsu.lock.internal.session.ProofException;
import dev.retsu.lock.internal.session.Session;
import dev.retsu.lock.internal.session.SessionOpener;
import dev.retsu.lock.internal.term.SessionWorker;
import dev.retsu.lock.internal.term.TermState;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a group member's session starts terms: keys are tried in batches of {@code batchSize} (one
 * statement each, which stops after the keys still wanted), and one durable fencing token is taken
 * for all keys a batch took, so keys taken together share a token value; per key, tokens strictly
 * increase from term to term. A batch whose token fails unlocks what it took. Runs on the session's
 * worker, as a job. Stateless.
 */
final class BatchTerms {

  private static final Logger LOG = LoggerFactory.getLogger(BatchTerms.class);

  private BatchTerms() {}

  /** In batches of {@code batchSize}, one fencing token per batch that took keys. */
  static List<LockKey> start(
      GroupCore core, SessionOpener.Spec spec, SessionWorker w, List<LockKey> keys, int limit) {
    List<LockKey> started = new ArrayList<>();
    int batchSize = core.settings().batchSize();
    for (int from = 0;
        from < keys.size() && started.size() < limit && !w.ended() && !core.closing();
        from += batchSize) {
      List<LockKey> batch = keys.subList(from, Math.min(keys.size(), from + batchSize));
      for (TermState t : tryBatch(core, spec, w, batch, limit - started.size())) {
        w.announce(t);
        started.add(t.term().key());
      }
    }
    return started;
  }

  private static List<TermState> tryBatch(
      GroupCore core, SessionOpener.Spec spec, SessionWorker w, List<LockKey> batch, int limit) {
    Session s = w.session();
    List<LockKey> granted;
    FencingToken token;
    try {
      granted = s.tryLock(batch, limit);
      if (granted.isEmpty()) {
        return List.of();
      }
      token = token(spec, w, granted);
      if (token == null) {
        return List.of();
      }
    } catch (SQLException e) {
      if (!Diagnostics.isSessionLost(e.getSQLState())) {
        // A failed statement may still have taken keys (session locks survive the error): end the
        // session, which releases them, rather than keep locks without terms.
        LOG.warn(
            "{} Trying {} keys failed; ending the session: {}",
            spec.context(),
            batch.size(),
            e.toString());
      }
      w.endSession(LossReason.SESSION_LOST, e, false);
      return List.of();
    } catch (ProofException e) {
      w.endSession(e.reason(), e.getCause(), false);
      return List.of();
    } catch (UnsafeSessionException e) {
      w.endSession(e.reason(), e, false);
      return List.of();
    }
    List<TermState> out = new ArrayList<>(granted.size());
    Instant now = spec.time().now();
    for (LockKey k : granted) {
      Term term =
          new Term(
              core.nextTermNumber(k),
              k,
              spec.candidateId(),
              now,
              token,
              s.id().pid(),
              s.id().route().path());
      TermState t = w.begin(term);
      core.termStarted(t);
      out.add(t);
    }
    return out;
  }

  /** One durable fencing token for every key of a batch; null (keys unlocked) on failure. */
  private static FencingToken token(SessionOpener.Spec spec, SessionWorker w, List<LockKey> granted)
      throws SQLException, ProofException {
    try {
      return w.session().fencingToken(granted);
    } catch (SQLException e) {
      if (Diagnostics.isSessionLost(e.getSQLState())) {
        throw e;
      }
      LOG.warn(
          "{} Taking the fencing token failed; releasing the {} keys just taken: {}",
          spec.context(),
          granted.size(),
          e.toString());
      w.session().unlock(granted); // a failed token leaves no transaction open
      return null;
    }
  }
}
