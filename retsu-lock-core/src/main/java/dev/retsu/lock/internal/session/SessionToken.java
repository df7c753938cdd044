package dev.retsu.lock.internal.session;

import dev.retsu.lock.FencingToken;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.internal.TimeSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a {@link LockSession} shows of its terms (invariant 8): the fencing token, taken by one
 * statement that also renames the session {@code retsu-lock:<candidate>#<token>} and notifies
 * {@code acquired}, or recorded from a WAIT grant; the settings a proof applies again, which follow
 * that name; and the {@code released} notice before a graceful release ({@link Notices}). Every
 * statement here runs with the session's I/O lock held and the session open: the caller checks.
 */
final class SessionToken {

  /** The session's logger: these lines are the session's, as they always were. */
  private static final Logger LOG = LoggerFactory.getLogger(LockSession.class);

  private final SessionId id;
  private final Connection conn;
  private final TimeSource time;
  private final Proofs proofs;
  private volatile SessionSettings settings;
  private volatile FencingToken namedFor;
  private volatile FencingToken settingsFor;
  private volatile FencingToken granted;
  private volatile boolean warnedReset;

  SessionToken(
      SessionId id, Connection conn, SessionSettings settings, TimeSource time, Proofs proofs) {
    this.id = id;
    this.conn = conn;
    this.settings = settings;
    this.time = time;
    this.proofs = proofs;
  }

  /** Records the token the winning statement took: {@link #take} returns it once, for free. */
  void taken(FencingToken token) {
    granted = token;
    termNamed(token);
  }

  /**
   * The token statement renamed the session: proofs that re-apply settings keep the new name. Only
   * recorded here (a takeover runs no string building); {@link #currentSettings()} makes the name.
   */
  private void termNamed(FencingToken token) {
    namedFor = token;
  }

  /** The settings a proof applies again: with the term's name once a token was taken. */
  SessionSettings currentSettings() {
    FencingToken token = namedFor;
    if (token != null && token != settingsFor) {
      settings = settings.withApplicationName(Notices.termName(candidateName(), token));
      settingsFor = token;
    }
    return settings;
  }

  /** The candidate's {@code application_name} as opened, without a term's token. */
  private String candidateName() {
    return Notices.candidateName(settings.get("application_name"));
  }

  String marker() {
    return settings.marker();
  }

  /** Logs, once per session, that user SQL reset it and its settings were applied again. */
  void settingsReapplied() {
    if (!warnedReset) {
      warnedReset = true;
      LOG.warn(
          "{} RESET ALL or DISCARD ran on the session (user SQL): its settings, among them the"
              + " server-side bounds, were applied again",
          id.context());
    }
  }

  /**
   * The token a grant recorded ({@link #taken}, which named and notified too), once, without a
   * round trip; else takes one in the statement that also shows it in the session's {@code
   * application_name} and notifies {@code acquired} for {@code announce}.
   *
   * @param announce the keys whose terms start with this token
   * @return the token
   * @throws SQLException when the statement failed, or the backend changed ({@link
   *     dev.retsu.lock.UnsafeSessionException})
   */
  FencingToken take(List<LockKey> announce) throws SQLException {
    FencingToken taken = granted;
    if (taken != null) {
      granted = null;
      return taken;
    }
    boolean full = TokenMode.full(id.dataSource(), conn, id.context());
    long start = time.nanoTime();
    String name = candidateName();
    try (PreparedStatement ps = conn.prepareStatement(SessionSql.fencingToken(full))) {
      ps.setString(1, Notices.termPrefix(name));
      ps.setString(2, id.candidateId());
      String[] ids = new String[announce.size()];
      for (int i = 0; i < ids.length; i++) {
        ids[i] = Notices.keyId(announce.get(i));
      }
      ps.setArray(3, conn.createArrayOf("text", ids));
      if (!full) {
        ps.setString(4, name); // the fallback's flushed message
      }
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        int pid = rs.getInt(4);
        if (pid != id.pid()) {
          throw Refusals.pidChanged(id, pid);
        }
        proofs.owned(start, false); // right after the key was taken, on the same backend
        FencingToken token = TokenMode.read(rs, 2, 3, 1);
        termNamed(token);
        return token;
      }
    }
  }

  /**
   * Notifies {@code released} for terms about to be released gracefully, in one statement, before
   * the release: a watcher learns of it at once, and a successor that waited on the key knows that
   * the term ended gracefully. Best effort: a failure is logged at DEBUG (the release follows
   * anyway; watchers then learn of it from their bounded check).
   *
   * @param payloads the notices ({@link Notices#released}), none with a line break
   * @param thenUnlockAll whether the same round trip then unlocks every key of the session (one
   *     that ends right after: {@link SessionSql#releasedThenUnlockAll()})
   */
  void released(List<String> payloads, boolean thenUnlockAll) {
    long start = time.nanoTime();
    try (PreparedStatement ps = conn.prepareStatement(releasedSql(thenUnlockAll))) {
      ps.setString(1, String.join("\n", payloads));
      ps.execute();
      proofs.alive(start);
    } catch (SQLException e) {
      LOG.debug("{} Could not notify the release: {}", id.context(), e.toString());
    }
  }

  /**
   * The statement of {@link #released}: the one that also unlocks only on a session in autocommit
   * with no transaction open, since its {@code COMMIT} would commit whatever such a transaction
   * holds (user work left uncommitted is rolled back by the session's end instead).
   */
  private String releasedSql(boolean thenUnlockAll) throws SQLException {
    if (thenUnlockAll
        && conn.getAutoCommit()
        && PgSession.transaction(conn) == PgSession.Transaction.IDLE) {
      return SessionSql.releasedThenUnlockAll();
    }
    return SessionSql.released();
  }
}
