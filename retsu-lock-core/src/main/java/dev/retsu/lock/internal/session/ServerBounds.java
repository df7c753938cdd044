package dev.retsu.lock.internal.session;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Invariant 5, server side: the one place that knows after how long PostgreSQL ends a leader's
 * session that went silent, and so frees its lock. The lease's session carries TCP keepalives (idle
 * + interval x count, with {@code tcp_user_timeout} at the same bound) for a vanished client and
 * {@code idle_session_timeout} for a client that is alive but paused. It also pins the timeouts a
 * role or database could set to end the session sooner than the client could know: {@code
 * idle_in_transaction_session_timeout} is set to the idle bound (so a role's shorter value cannot
 * end a healthy leader, and a paused leader inside a transaction is still bounded) and {@code
 * transaction_timeout} (PostgreSQL 17+) is turned off. All of them are set in the statement that
 * takes the lock. The client-side deadline ({@code selfFenceAfter}) must stay at least {@link
 * #MIN_FENCING_MARGIN} below {@link #bound()}. Immutable, thread-safe.
 */
public final class ServerBounds {

  /** The least gap between the self-fencing deadline and the server-side bound: 1 second. */
  public static final Duration MIN_FENCING_MARGIN = Duration.ofSeconds(1);

  private final Duration keepaliveIdle;
  private final Duration keepaliveInterval;
  private final int keepaliveCount;
  private final Duration idleSessionTimeout;

  public ServerBounds(
      Duration keepaliveIdle,
      Duration keepaliveInterval,
      int keepaliveCount,
      Duration idleSessionTimeout) {
    this.keepaliveIdle = keepaliveIdle;
    this.keepaliveInterval = keepaliveInterval;
    this.keepaliveCount = keepaliveCount;
    this.idleSessionTimeout = idleSessionTimeout;
  }

  /** After how long the server ends the session of a client that vanished (keepalives). */
  public Duration keepaliveBound() {
    return keepaliveIdle.plus(keepaliveInterval.multipliedBy(keepaliveCount));
  }

  /** The sooner of the keepalive bound and {@code idle_session_timeout} (when on). */
  public Duration bound() {
    Duration keep = keepaliveBound();
    return idleSessionTimeout.isZero() || keep.compareTo(idleSessionTimeout) < 0
        ? keep
        : idleSessionTimeout;
  }

  /** The idle bound pinned on the session: idle_session_timeout, or the keepalive bound if off. */
  private Duration idleBound() {
    return idleSessionTimeout.isZero() ? Duration.ZERO : idleSessionTimeout;
  }

  /**
   * Refuses a self-fencing deadline that does not leave {@link #MIN_FENCING_MARGIN} before the
   * server could free the lock.
   */
  public void checkDeadline(Duration selfFenceAfter) {
    Duration bound = bound();
    if (selfFenceAfter.plus(MIN_FENCING_MARGIN).compareTo(bound) > 0) {
      throw new IllegalStateException(
          "selfFenceAfter must be at least "
              + MIN_FENCING_MARGIN
              + " shorter than the server-side bound "
              + bound
              + " (tcp keepalives "
              + keepaliveBound()
              + (idleSessionTimeout.isZero() ? "" : ", idle_session_timeout " + idleSessionTimeout)
              + "), but was "
              + selfFenceAfter);
    }
  }

  /** The settings the lease's session carries, in the order they are applied. */
  public Map<String, String> sessionSettings() {
    Map<String, String> s = new LinkedHashMap<>();
    s.put("tcp_keepalives_idle", Long.toString(keepaliveIdle.toSeconds()));
    s.put("tcp_keepalives_interval", Long.toString(keepaliveInterval.toSeconds()));
    s.put("tcp_keepalives_count", Integer.toString(keepaliveCount));
    s.put("tcp_user_timeout", Long.toString(keepaliveBound().toMillis()));
    s.put("client_connection_check_interval", Long.toString(keepaliveInterval.toMillis()));
    s.put("idle_session_timeout", Long.toString(idleSessionTimeout.toMillis()));
    s.put("idle_in_transaction_session_timeout", Long.toString(idleBound().toMillis()));
    s.put("transaction_timeout", "0");
    return s;
  }

  @Override
  public String toString() {
    return "server bound "
        + bound()
        + " (keepalives "
        + keepaliveIdle.toSeconds()
        + "s/"
        + keepaliveInterval.toSeconds()
        + "s x"
        + keepaliveCount
        + ", idle_session_timeout "
        + idleSessionTimeout
        + ")";
  }
}
