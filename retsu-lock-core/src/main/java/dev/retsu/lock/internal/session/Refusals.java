package dev.retsu.lock.internal.session;

import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.UnsafeSessionException;
import java.util.Locale;
import java.util.Optional;

/**
 * Each refusal of an unsafe session, written once: a hot standby, a backend shared between clients
 * (a transaction-mode pooler), and an endpoint that managed providers document as a
 * transaction-mode pooler. The advice names what to change where the host and port the client
 * connected to tell the provider: Supabase's Supavisor on port 6543, Neon's {@code -pooler} hosts,
 * Azure's built-in PgBouncer on port 6432, and PgBouncer anywhere else. Thread-safe (stateless).
 */
public final class Refusals {

  private static final String GENERIC =
      "Connect directly, or through a pooler in session mode (PgBouncer: pool_mode = session).";

  private Refusals() {}

  public static UnsafeSessionException hotStandby(LockKey key, String candidateId) {
    return new UnsafeSessionException(
        LossReason.HOT_STANDBY_DETECTED,
        "The server is a hot standby (pg_is_in_recovery() = true): advisory locks there do not"
            + " exclude holders on the primary. Connect to the primary.",
        key,
        candidateId);
  }

  /**
   * A backend that already held the key, or whose pid changed between two statements.
   *
   * @param what what was seen, e.g. "Backend 42 already holds this lock before we took it"
   */
  public static UnsafeSessionException sharedBackend(String what, LockKey key, String candidateId) {
    return sharedBackend(what, ServerRoute.UNKNOWN, key, candidateId);
  }

  /**
   * A backend shared between clients, with the advice for where the client connected.
   *
   * @param what what was seen
   * @param route where the session goes
   */
  public static UnsafeSessionException sharedBackend(
      String what, ServerRoute route, LockKey key, String candidateId) {
    return new UnsafeSessionException(
        LossReason.POOLER_DETECTED,
        what
            + ": the backend is shared between clients, as behind a transaction-mode pooler, so a"
            + " session lock cannot give mutual exclusion. "
            + advice(route),
        key,
        candidateId);
  }

  public static UnsafeSessionException alreadyHeld(int pid, LockKey key, String candidateId) {
    return alreadyHeld(pid, ServerRoute.UNKNOWN, key, candidateId);
  }

  /**
   * A backend that already held the key, with the advice for where the client connected.
   *
   * @param pid the backend
   * @param route where the session goes
   */
  public static UnsafeSessionException alreadyHeld(
      int pid, ServerRoute route, LockKey key, String candidateId) {
    return sharedBackend(
        "Backend " + pid + " already holds this lock before we took it", route, key, candidateId);
  }

  public static UnsafeSessionException pidChanged(
      int from, int to, LockKey key, String candidateId) {
    return sharedBackend(
        "The backend changed between two statements (pid " + from + " then " + to + ")",
        key,
        candidateId);
  }

  /**
   * The backend of a session we own changed between two statements, with the advice for where it
   * connected.
   *
   * @param id the session as opened
   * @param to the pid seen now
   */
  public static UnsafeSessionException pidChanged(SessionId id, int to) {
    return sharedBackend(
        "The backend changed between two statements (pid " + id.pid() + " then " + to + ")",
        id.route(),
        id.key(),
        id.candidateId());
  }

  /**
   * An endpoint its provider documents as a transaction-mode pooler, refused before any statement:
   * a lock taken there would stay on a pooled backend that other clients get next.
   *
   * @param route where the client connected
   * @return the refusal, or empty for any other endpoint
   */
  static Optional<UnsafeSessionException> transactionEndpoint(
      ServerRoute route, LockKey key, String candidateId) {
    Provider p = Provider.of(route);
    if (p != Provider.SUPAVISOR_TRANSACTION && p != Provider.NEON_POOLER) {
      return Optional.empty();
    }
    return Optional.of(
        new UnsafeSessionException(
            LossReason.POOLER_DETECTED,
            route.host()
                + ":"
                + route.port()
                + " is a transaction-mode pooler, where a session lock cannot give mutual"
                + " exclusion. "
                + p.advice,
            key,
            candidateId));
  }

  /** What to change, for where the client connected. */
  static String advice(ServerRoute route) {
    return Provider.of(route).advice;
  }

  /** The endpoints whose advice differs. */
  enum Provider {
    SUPAVISOR_TRANSACTION(
        "Supabase: port 6543 is Supavisor's transaction mode; use port 5432 (session mode) or the"
            + " direct connection."),
    NEON_POOLER(
        "Neon: a -pooler host name is PgBouncer in transaction mode; remove -pooler from the host"
            + " name to connect directly."),
    AZURE_PGBOUNCER(
        "Azure: port 6432 is the built-in PgBouncer, in transaction mode by default; use port"
            + " 5432, or set pgbouncer.pool_mode to SESSION."),
    OTHER(GENERIC);

    final String advice;

    Provider(String advice) {
      this.advice = advice;
    }

    static Provider of(ServerRoute route) {
      String host = route.host() == null ? "" : route.host().toLowerCase(Locale.ROOT);
      int port = route.port();
      if ((host.endsWith(".supabase.com") || host.endsWith(".supabase.co")) && port == 6543) {
        return SUPAVISOR_TRANSACTION;
      }
      if (host.endsWith(".neon.tech") && host.contains("-pooler.")) {
        return NEON_POOLER;
      }
      if (host.endsWith(".postgres.database.azure.com") && port == 6432) {
        return AZURE_PGBOUNCER;
      }
      return OTHER;
    }
  }
}
