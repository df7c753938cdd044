package dev.retsu.lock.internal.session;

import dev.retsu.lock.AdvisoryLockException;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.ServerPath;
import dev.retsu.lock.UnsafeSessionException;
import dev.retsu.lock.internal.TimeSource;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Invariant 4, once: how every recipe gets a session of its own. It borrows a connection, bounds
 * the library's round trips, ends any transaction the connection was lent in, and runs one
 * statement that applies the session's settings and marker and refuses a hot standby and a backend
 * another lease or group already marked (a backend shared through a transaction-mode pooler). The
 * same statement reads the route ({@link ServerRoute}): an endpoint its provider documents as a
 * transaction-mode pooler is refused before that statement, and a session through a proxy is logged
 * at WARN. A session that is refused or fails half way is ended, never handed back to its pool; a
 * POLL attempt that did not get the lock hands its connection back holding nothing, as it found it.
 * What happens to the connection before that statement is {@link SessionBorrow}'s. Stateless,
 * thread-safe.
 */
public final class SessionOpener {

  private static final Logger LOG = LoggerFactory.getLogger(SessionOpener.class);

  /**
   * What a session is opened with.
   *
   * @param dataSource where connections come from
   * @param key the lock's key, or the group's membership key, for messages
   * @param candidateId the candidate
   * @param context the log prefix
   * @param applicationName the session's {@code application_name}
   * @param settings further settings (server-side bounds, the user's)
   * @param roundTripTimeout the network timeout of the library's round trips
   * @param heartbeat the interval between proofs
   * @param selfFenceAfter the liveness deadline
   * @param time the clock
   */
  public record Spec(
      DataSource dataSource,
      LockKey key,
      String candidateId,
      String context,
      String applicationName,
      Map<String, String> settings,
      Duration roundTripTimeout,
      Duration heartbeat,
      Duration selfFenceAfter,
      TimeSource time) {

    public int roundTripMillis() {
      return (int) roundTripTimeout.toMillis();
    }
  }

  private SessionOpener() {}

  /**
   * One POLL attempt on one key: borrow, take the key without waiting, and keep the session only
   * when it was granted.
   *
   * @param spec what to open
   * @return the session holding the key, or empty when another session holds it
   * @throws AdvisoryLockException when the database cannot be reached or the attempt failed (an
   *     {@link dev.retsu.lock.UnsafeSessionException} on a hot standby or a shared backend)
   */
  public static Optional<LockSession> tryLock(Spec spec) {
    Connection conn = SessionBorrow.borrow(spec);
    boolean settled = false;
    try {
      int previousTimeout = conn.getNetworkTimeout();
      ServerRoute client = refuseTransactionEndpoint(spec, conn);
      boolean autoCommit = SessionBorrow.prepare(spec, conn);
      SessionSettings settings = SessionBorrow.settings(spec);
      long start = spec.time().nanoTime();
      long wall = spec.time().wallMillis();
      try (PreparedStatement ps = conn.prepareStatement(SessionSql.tryLock(spec.key()))) {
        int next = settings.bind(conn, ps, 1);
        next = KeySql.bindArguments(ps, next, spec.key());
        next = KeySql.bindLocks(ps, next, spec.key());
        next = KeySql.bindArguments(ps, next, spec.key());
        KeySql.bindArguments(ps, next, spec.key());
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          int pid = rs.getInt(1);
          ServerRoute route = route(client, conn, rs, 7);
          refuseUnsafe(spec, route, pid, rs.getBoolean(2), rs.getBoolean(3));
          if (!rs.getBoolean(4)) {
            conn.setNetworkTimeout(SessionTerminator.DIRECT, previousTimeout);
            if (!autoCommit) {
              conn.setAutoCommit(false); // hand it back as we found it
            }
            settled = true;
            conn.close();
            return Optional.empty();
          }
          LockSession s =
              session(
                  spec, conn, settings, pid, rs.getArray(5), rs.getString(6), route, start, wall);
          conn.setNetworkTimeout(SessionTerminator.DIRECT, previousTimeout);
          s.held(List.of(spec.key()));
          interruptedCheck(spec);
          settled = true;
          return Optional.of(s);
        }
      }
    } catch (SQLException e) {
      throw failed(spec, "Acquiring failed", e);
    } finally {
      if (!settled) {
        // No statement on it: a refused session may be a backend shared with another client.
        SessionTerminator.endSession(spec.dataSource(), conn, true, spec.context());
      }
    }
  }

  /**
   * Opens a session of the recipe's own that holds nothing yet (a waiting standby's, a group's):
   * settings and marker applied in one statement that refuses a hot standby and a marked backend.
   *
   * @param spec what to open
   * @return the session, in autocommit, bounded by the round-trip timeout
   * @throws AdvisoryLockException when it cannot be opened or is refused
   */
  public static LockSession open(Spec spec) {
    Connection conn = SessionBorrow.borrow(spec);
    boolean kept = false;
    try {
      ServerRoute client = refuseTransactionEndpoint(spec, conn);
      SessionBorrow.prepare(spec, conn);
      SessionSettings settings = SessionBorrow.settings(spec);
      long start = spec.time().nanoTime();
      long wall = spec.time().wallMillis();
      try (PreparedStatement ps = conn.prepareStatement(SessionSql.open())) {
        settings.bind(conn, ps, 1);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          int pid = rs.getInt(1);
          ServerRoute route = route(client, conn, rs, 6);
          if (rs.getBoolean(2)) {
            throw Refusals.hotStandby(spec.key(), spec.candidateId());
          }
          String marker = rs.getString(3);
          if (marker != null && !marker.isEmpty()) {
            throw Refusals.sharedBackend(
                "Backend "
                    + pid
                    + " already carries another retsu-lock session's marker "
                    + SessionSql.MARKER,
                route,
                spec.key(),
                spec.candidateId());
          }
          LockSession s =
              session(
                  spec, conn, settings, pid, rs.getArray(4), rs.getString(5), route, start, wall);
          kept = true;
          return s;
        }
      }
    } catch (SQLException e) {
      throw failed(spec, "Opening a session failed", e);
    } finally {
      if (!kept) {
        SessionTerminator.endSession(spec.dataSource(), conn, true, spec.context());
      }
    }
  }

  /**
   * The session whose opening statement started at {@code start}: it proved both from then. A
   * session through a proxy is logged at WARN, once for the session, with the bounds that still
   * apply.
   */
  private static LockSession session(
      Spec spec,
      Connection conn,
      SessionSettings settings,
      int pid,
      Array applied,
      String database,
      ServerRoute route,
      long start,
      long wallStart)
      throws SQLException {
    List<String> names = settings.applied(applied);
    List<String> unknown = settings.unknown(names);
    if (!unknown.isEmpty()) {
      LOG.debug(
          "{} The server does not know the session settings {}; skipped", spec.context(), unknown);
    }
    if (route.path() == ServerPath.PROXIED) {
      LOG.warn(
          "{} {}", spec.context(), route.proxiedWarning(spec.settings(), spec.selfFenceAfter()));
    } else {
      LOG.debug("{} Session {} route: {}", spec.context(), pid, route);
    }
    SessionId id =
        new SessionId(
            spec.dataSource(),
            pid,
            database,
            spec.key(),
            spec.candidateId(),
            spec.context(),
            names,
            route);
    Proofs proofs =
        new Proofs(spec.time(), spec.heartbeat(), spec.selfFenceAfter(), start, wallStart);
    return new LockSession(id, conn, settings, spec.time(), proofs, spec.roundTripMillis());
  }

  private static void refuseUnsafe(
      Spec spec, ServerRoute route, int pid, boolean inRecovery, boolean alreadyHeld) {
    if (inRecovery) {
      throw Refusals.hotStandby(spec.key(), spec.candidateId());
    }
    if (alreadyHeld) {
      throw Refusals.alreadyHeld(pid, route, spec.key(), spec.candidateId());
    }
  }

  /**
   * Refuses, before any statement, an endpoint that its provider documents as a transaction-mode
   * pooler (a lock taken there would stay on a pooled backend); returns the client's side of the
   * route.
   */
  private static ServerRoute refuseTransactionEndpoint(Spec spec, Connection conn) {
    ServerRoute client = ServerRoute.ofClient(conn);
    Optional<UnsafeSessionException> refused =
        Refusals.transactionEndpoint(client, spec.key(), spec.candidateId());
    if (refused.isPresent()) {
      throw refused.get();
    }
    return client;
  }

  /** The route with the server's side of it, from the four columns starting at {@code column}. */
  private static ServerRoute route(ServerRoute client, Connection conn, ResultSet rs, int column)
      throws SQLException {
    return client.withServerView(
        conn,
        rs.getString(column),
        (Integer) rs.getObject(column + 1),
        rs.getString(column + 2),
        (Integer) rs.getObject(column + 3));
  }

  private static void interruptedCheck(Spec spec) {
    if (Thread.currentThread().isInterrupted()) {
      throw new AdvisoryLockException(
          "Interrupted while acquiring; the session was ended",
          spec.key(),
          spec.candidateId(),
          new InterruptedException());
    }
  }

  /**
   * The failure of an attempt or an open, with its SQLState.
   *
   * @param spec whose
   * @param what what failed
   * @param e the SQLException
   * @return the exception to throw
   */
  public static AdvisoryLockException failed(Spec spec, String what, SQLException e) {
    return new AdvisoryLockException(
        what + " (SQLState " + e.getSQLState() + "); the session was ended",
        spec.key(),
        spec.candidateId(),
        e);
  }
}
