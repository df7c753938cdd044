package dev.retsu.lock.quarkus;

import dev.retsu.lock.AttemptResult;
import dev.retsu.lock.LeaderContext;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import dev.retsu.lock.quarkus.internal.TermGate;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * One named leader ({@code retsu.lock.leaders.<name>}): a {@link LeaderLoop} on its own thread
 * {@code retsu-lock-leader-<name>}, started when the application starts and closed when it stops,
 * and its leader-only gate ({@link LeaderOnly}, {@link #runIfLeader}). Get it from {@link
 * RetsuLeaders}. Thread-safe; state may change behind the caller's back.
 */
public final class RetsuLeader {

  /** What the leader does now, as health shows it. */
  public enum Role {
    /** Not started yet. */
    STARTING,
    /** Leads: a term is on. */
    LEADER,
    /** Contends: another session holds the key, or the database cannot be reached yet. */
    STANDBY,
    /** Stopping or stopped with the application. */
    STOPPED,
    /** Will never lead again in this process: its loop failed ({@link #failure()} says why). */
    FAILED
  }

  private final String name;
  private final LeaderLoop loop;
  private final TermGate gate;
  private final Consumer<Object> events;
  private volatile String waiting = "starting";
  private volatile Instant waitingSince = Instant.now();
  private volatile String lastError;
  private volatile boolean started;

  RetsuLeader(String name, LeaderLoop loop, Duration closeTimeout, Consumer<Object> events) {
    this.name = name;
    this.loop = loop;
    this.gate = new TermGate("[leader=" + name + "]", closeTimeout);
    this.events = events;
    loop.addListener(new Hooks());
  }

  /**
   * Returns the leader's name.
   *
   * @return the name under {@code retsu.lock.leaders}
   */
  public String name() {
    return name;
  }

  /**
   * Returns the lock key.
   *
   * @return the key
   */
  public LockKey key() {
    return loop.key();
  }

  /**
   * Returns this instance's candidate id.
   *
   * @return the id
   */
  public String candidateId() {
    return loop.candidateId();
  }

  /**
   * Returns whether this instance leads now. A hint: call {@link LeaderContext#ensureLeader()}
   * before an effect.
   *
   * @return true while a term is on
   */
  public boolean isLeader() {
    return loop.isLeader();
  }

  /**
   * Returns the current term.
   *
   * @return the term while leading, else empty
   */
  public Optional<Term> currentTerm() {
    return loop.currentTerm();
  }

  /**
   * Returns why the loop stopped for good.
   *
   * @return the failure, or empty while it takes part or after a graceful stop
   */
  public Optional<Throwable> failure() {
    return loop.failure();
  }

  /**
   * Returns what the leader does now.
   *
   * @return the role
   */
  public Role role() {
    switch (loop.state()) {
      case NEW:
        return Role.STARTING;
      case FAILED:
        return Role.FAILED;
      case CLOSED:
        return started ? Role.STOPPED : Role.STARTING;
      default:
        return loop.isLeader() ? Role.LEADER : Role.STANDBY;
    }
  }

  /**
   * Returns the context of this leader's term while the calling thread runs its leader-only work (a
   * {@link LeaderOnly} method, or {@link #runIfLeader}): its connection is the session that holds
   * the lock, for database work that must stop with the term.
   *
   * @return the context
   * @throws IllegalStateException outside this leader's leader-only work
   */
  public LeaderContext context() {
    LeaderContext ctx = gate.current();
    if (ctx == null) {
      throw new IllegalStateException(
          "[leader="
              + name
              + "] context() is only available inside this leader's @LeaderOnly work or"
              + " runIfLeader, but the calling thread "
              + Thread.currentThread().getName()
              + " runs none");
    }
    return ctx;
  }

  /**
   * Runs the work if this instance leads, with the term bound to the calling thread (what {@link
   * LeaderOnly} does around a method). When the term ends, the work is interrupted, and a graceful
   * end waits for it (up to the leader's {@code close-timeout}) before the lock is released.
   *
   * @param work the work
   * @return whether it ran; false on a standby
   * @throws Exception what the work threw
   */
  public boolean runIfLeader(LeaderWork work) throws Exception {
    return gate.run(work);
  }

  /**
   * Returns the details health shows: {@code role}, {@code candidate}, {@code key}, and on a
   * standby why it does not lead ({@code held-elsewhere}, {@code database-unreachable} with the
   * last error, {@code stepped-down}, {@code starting}) and since when.
   *
   * @return the details, a new map
   */
  public Map<String, Object> details() {
    Map<String, Object> d = new LinkedHashMap<>();
    Role role = role();
    d.put("role", role.name().toLowerCase(Locale.ROOT));
    d.put("candidate", candidateId());
    d.put("key", key().toString());
    if (role == Role.LEADER) {
      loop.currentTerm().ifPresent(t -> d.put("since", t.start().toString()));
    } else if (role == Role.STANDBY) {
      d.put("reason", waiting);
      d.put("since", waitingSince.toString());
      String error = lastError;
      if ("database-unreachable".equals(waiting) && error != null) {
        d.put("lastError", error);
      }
    } else if (role == Role.FAILED) {
      loop.failure().ifPresent(f -> d.put("error", f.getClass().getName() + ": " + message(f)));
    }
    return d;
  }

  void start() {
    started = true;
    String thread = "retsu-lock-leader-" + name;
    loop.start(
        gate::bind,
        r -> {
          Thread t = new Thread(r, thread);
          t.setDaemon(true);
          return t;
        });
  }

  void close() {
    loop.close();
  }

  LeaderLoop loop() {
    return loop;
  }

  @Override
  public String toString() {
    return "RetsuLeader[" + name + ", " + role() + "]";
  }

  private void waiting(String why) {
    if (!why.equals(waiting)) {
      waitingSince = Instant.now();
      waiting = why;
    }
  }

  /** The message with its SQLState, from the first cause that has one. */
  static String message(Throwable error) {
    String message = String.valueOf(error.getMessage());
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (t instanceof SQLException s && s.getSQLState() != null) {
        String state = "SQLState " + s.getSQLState();
        return message.contains(state) ? message : message + " (" + state + ")";
      }
    }
    return message;
  }

  /** The loop's events, on its threads, one call at a time. */
  private final class Hooks implements LeaderListener {

    @Override
    public void onAttempt(AttemptResult result, Duration duration, Throwable error) {
      if (result == AttemptResult.HELD_ELSEWHERE) {
        waiting("held-elsewhere");
      } else if (result == AttemptResult.ERROR) {
        lastError = error == null ? "unknown" : error.getClass().getName() + ": " + message(error);
        waiting("database-unreachable");
      }
    }

    @Override
    public void onAcquired(Term term) {
      gate.begin(term);
      events.accept(new LeadershipGranted(name, term));
    }

    @Override
    public void onLost(Term term, LossReason reason, Throwable cause) {
      waiting("stepped-down");
      gate.end(term, reason);
      events.accept(new LeadershipRevoked(name, term, reason));
    }
  }
}
