package dev.retsu.lock.spring.boot;

import dev.retsu.lock.AttemptResult;
import dev.retsu.lock.LeaderInfo;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LeaderTask;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * A leader on the database: one {@link LeaderLoop} on its own thread {@code
 * retsu-lock-leader-<name>}. It remembers why it does not lead (the last attempt found the lock
 * held, or could not reach the database, or the last term ended and it backs off; a WAIT standby
 * queued behind the holder counts as held elsewhere from the start of its wait), so health can say
 * so without I/O. Thread-safe.
 */
final class LoopCandidacy implements Candidacy {

  /** Why a standby does not lead, as health shows it. */
  enum Waiting {
    /** No attempt has finished yet. */
    STARTING,
    /** The last attempt found the lock held by another session. */
    HELD_ELSEWHERE,
    /** The last attempt could not reach the database, or was refused; it keeps trying. */
    DATABASE_UNREACHABLE,
    /** The last term ended; it contends again after a backoff. */
    STEPPED_DOWN
  }

  private final String name;
  private final LeaderLoop loop;
  private volatile Waiting waiting = Waiting.STARTING;
  private volatile Instant waitingSince = Instant.now();
  private volatile String lastError;

  /** When health first saw the WAIT standby queued, before an attempt said it is held elsewhere. */
  private final java.util.concurrent.atomic.AtomicReference<Instant> waitSeen =
      new java.util.concurrent.atomic.AtomicReference<>();

  LoopCandidacy(String name, LeaderLoop loop) {
    this.name = name;
    this.loop = loop;
  }

  @Override
  public void start(LeaderTask task, Terms terms) {
    loop.addListener(new Hooks(terms));
    String thread = "retsu-lock-leader-" + name;
    loop.start(
            ctx -> terms.refresh(task, ctx),
            r -> {
              Thread t = new Thread(r, thread);
              t.setDaemon(true);
              return t;
            })
        .whenComplete(
            (ok, error) -> {
              if (error != null) {
                terms.failed(error);
              }
            });
  }

  @Override
  public void close() {
    loop.close();
  }

  @Override
  public boolean isLeader() {
    return loop.isLeader();
  }

  @Override
  public Optional<Term> currentTerm() {
    return loop.currentTerm();
  }

  @Override
  public Optional<LeaderInfo> currentHolder() {
    return loop.currentHolder();
  }

  @Override
  public Optional<Throwable> failure() {
    return loop.failure();
  }

  @Override
  public Optional<LeaderLoop> loop() {
    return Optional.of(loop);
  }

  @Override
  public void describe(Map<String, Object> details) {
    LeaderLoop.State state = loop.state();
    details.put("state", state.name());
    if (state == LeaderLoop.State.RUNNING && !loop.isLeader()) {
      Map<String, Object> standby = new LinkedHashMap<>();
      Waiting w = waiting;
      Instant since = waitingSince;
      if (loop.isWaiting()) {
        // A WAIT standby queued behind the holder: its attempt ends only with the grant or after
        // wait-timeout, so no attempt has said so yet.
        if (w != Waiting.HELD_ELSEWHERE) {
          waitSeen.compareAndSet(null, Instant.now());
          since = waitSeen.get();
        }
        w = Waiting.HELD_ELSEWHERE;
      } else {
        waitSeen.set(null);
      }
      standby.put("reason", w.name().toLowerCase(java.util.Locale.ROOT).replace('_', '-'));
      standby.put("since", since.toString());
      String error = lastError;
      if (w == Waiting.DATABASE_UNREACHABLE && error != null) {
        standby.put("lastError", error);
      }
      details.put("standby", standby);
    }
  }

  private void waiting(Waiting w) {
    if (waiting != w) {
      waitingSince = Instant.now();
      waiting = w;
    }
  }

  /** The loop's events; on the loop's threads, one call at a time. */
  private final class Hooks implements LeaderListener {
    private final Terms terms;

    Hooks(Terms terms) {
      this.terms = terms;
    }

    @Override
    public void onAttempt(AttemptResult result, Duration duration, Throwable error) {
      if (result == AttemptResult.HELD_ELSEWHERE) {
        waiting(Waiting.HELD_ELSEWHERE);
      } else if (result == AttemptResult.ERROR) {
        lastError = error == null ? "unknown" : error.getClass().getName() + ": " + message(error);
        waiting(Waiting.DATABASE_UNREACHABLE);
      }
    }

    @Override
    public void onAcquired(Term term) {
      terms.started(term);
    }

    @Override
    public void onRefreshSucceeded(Term term, Duration duration) {
      terms.refreshed(term);
    }

    @Override
    public void onLost(Term term, LossReason reason, Throwable cause) {
      waiting(Waiting.STEPPED_DOWN);
      terms.ended(term, reason);
    }
  }

  /**
   * The message with its SQLState, from the first cause that has one, unless the message already
   * names it (core's exceptions do).
   */
  static String message(Throwable error) {
    String message = String.valueOf(error.getMessage());
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (t instanceof java.sql.SQLException s && s.getSQLState() != null) {
        String state = "SQLState " + s.getSQLState();
        return message.contains(state) ? message : message + " (" + state + ")";
      }
    }
    return message;
  }
}
