package dev.retsu.lock.internal.session;

import dev.retsu.lock.LockKey;

/**
 * Every SQL text the library sends on a session, written once, for one key ({@code LeaderLoop},
 * {@code AdvisoryLock}) and for key arrays ({@code LeaderGroup}). Each statement that takes a lock
 * also checks, in the same statement and before locking, that the server is a primary and that the
 * backend is the one we own (a backend shared between clients, as behind a transaction-mode pooler,
 * would grant the key again). Every function is schema-qualified, so a user's search_path cannot
 * shadow it; keys and values are always bound parameters. (The {@code unnest} in FROM is syntax,
 * not a function, so it cannot be qualified.) Stateless, thread-safe.
 *
 * <p>The session marker {@value #MARKER} is a custom setting that only our own session sets, to a
 * random value. It makes the O(1) ownership proof possible: a session advisory lock ends only with
 * its session or by an unlock that same session runs, so the same live backend with its marker
 * intact, untouched by user code since the last full proof, still holds every lock it held. {@code
 * RESET ALL} and {@code DISCARD ALL} clear the marker; a backend that already carries one before we
 * set ours belongs to another lease or group: a shared backend.
 */
public final class SessionSql {

  /** The custom setting that marks a session as the library's own. */
  public static final String MARKER = "retsu.lock_session";

  /**
   * The comment a waiting standby's statement starts with, so that monitors can tell it from a
   * long-running query ({@code pg_stat_activity.query LIKE '/* retsu-lock standby wait%'}).
   */
  public static final String STANDBY_WAIT = "/* retsu-lock standby wait */";

  static final String THIS_DATABASE =
      "(SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname ="
          + " pg_catalog.current_database())";

  /**
   * The server's side of the route ({@link ServerRoute}), four columns: the client address and port
   * the server sees, and its own address and port; all null on a Unix-domain socket.
   */
  private static final String ROUTE =
      ", pg_catalog.host(pg_catalog.inet_client_addr()), pg_catalog.inet_client_port(),"
          + " pg_catalog.host(pg_catalog.inet_server_addr()), pg_catalog.inet_server_port()";

  /**
   * The pid of a preferred candidate's session blocked by this one, or 0 (an int expression). A
   * session counts only when it is of the candidates' role, this session's own ({@link
   * #candidateRole}): any role can name itself preferred, and any role can queue on the key.
   */
  private static final String PREFERRED_WAITING =
      "coalesce((SELECT a.pid FROM pg_catalog.pg_stat_activity a WHERE"
          + " pg_catalog.starts_with(a.application_name, '"
          + Notices.PREFERRED_PREFIX
          + "') AND a.datname = pg_catalog.current_database() AND "
          + candidateRole("a", null)
          + " AND pg_catalog.pg_backend_pid() = ANY (pg_catalog.pg_blocking_pids(a.pid)) LIMIT 1),"
          + " 0)";

  private SessionSql() {}

  /**
   * Whether the {@code pg_stat_activity} row {@code activity} is a session of the candidates' role
   * (DESIGN invariant 9): the role it logged in as ({@code usesysid}, written by the server, never
   * by the session) is {@code role}, or, when {@code role} is null, the role the asking session
   * logged in as ({@code SESSION_USER}, a keyword no search_path can shadow). A session's {@code
   * application_name} names a candidate only together with this check.
   *
   * @param activity the alias of a {@code pg_stat_activity} row
   * @param role the candidates' role, or null for the asking session's own
   * @return a boolean SQL expression; false for a row without a role (a background worker)
   */
  public static String candidateRole(String activity, String role) {
    String who = role == null ? "SESSION_USER" : literal(role);
    return "coalesce("
        + activity
        + ".usesysid = (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = "
        + who
        + "), false)";
  }

  /** A text literal: single quotes doubled, standard_conforming_strings assumed off or on alike. */
  static String literal(String text) {
    if (text.indexOf('\\') >= 0 || text.indexOf('\0') >= 0) {
      throw new IllegalArgumentException(
          "role must not contain a backslash or NUL, but was " + text);
    }
    return "'" + text.replace("'", "''") + "'";
  }

  /**
   * Applies the session settings (names and values as two text arrays, see {@link SessionSettings})
   * when {@code condition} holds; the marker is always set, other settings the server does not know
   * are skipped. Returns the names applied.
   */
  private static String applySettingsWhen(String condition) {
    return "CASE WHEN "
        + condition
        + " THEN (SELECT coalesce(pg_catalog.array_agg(v.name ORDER BY v.ord), '{}')"
        + " FROM unnest(?::text[], ?::text[]) WITH ORDINALITY AS v(name, value, ord)"
        + " WHERE "
        + condition
        + " AND CASE WHEN v.name = '"
        + MARKER
        + "' OR EXISTS (SELECT 1 FROM pg_catalog.pg_settings p WHERE p.name = v.name)"
        + " THEN pg_catalog.set_config(v.name, v.value, false) IS NOT NULL ELSE false END) END";
  }

  /** Whether this backend already holds the key; binds {@link KeySql#bindLocks}. */
  private static String heldByThisBackend(LockKey key) {
    return "EXISTS (SELECT 1 FROM pg_catalog.pg_locks l WHERE l.locktype = 'advisory' AND"
        + " l.granted AND l.pid = pg_catalog.pg_backend_pid() AND l.database = "
        + THIS_DATABASE
        + " AND "
        + KeySql.pgLocksPredicate(key, "l")
        + ")";
  }

  /**
   * One attempt on one key, on a borrowed session: pid, in_recovery, already_held, locked, settings
   * applied (null unless locked), database. A shared-mode try comes first: when another session
   * holds the key (the common answer of a standby) the attempt costs O(1) and never reads {@code
   * pg_locks}; only when the key looks free does it check that this backend does not already hold
   * it. The settings (and the marker) are applied in the same statement, only when the lock was
   * granted. Then the route: client address and port as the server sees them, server address and
   * port. Binds: settings names, values; key arguments; key locks; key arguments twice.
   */
  public static String tryLock(LockKey key) {
    String args = KeySql.arguments(key);
    return "SELECT s.pid, s.in_recovery, s.already, s.locked, "
        + applySettingsWhen("s.locked")
        + ", pg_catalog.current_database()"
        + ROUTE
        + " FROM (SELECT t.pid, t.in_recovery, t.already, CASE WHEN"
        + " t.in_recovery OR t.already OR NOT t.free THEN false ELSE"
        + " pg_catalog.pg_try_advisory_lock("
        + args
        + ") END AS locked FROM (SELECT f.pid, f.in_recovery, f.free, CASE WHEN f.free THEN "
        + heldByThisBackend(key)
        + " ELSE false END AS already FROM (SELECT pg_catalog.pg_backend_pid() AS pid,"
        + " pg_catalog.pg_is_in_recovery() AS in_recovery, CASE WHEN"
        + " pg_catalog.pg_is_in_recovery() THEN false ELSE"
        + " pg_catalog.pg_try_advisory_lock_shared("
        + args
        + ") AND pg_catalog.pg_advisory_unlock_shared("
        + args
        + ") END AS free OFFSET 0) f OFFSET 0) t OFFSET 0) s";
  }

  /**
   * Opens a session of our own (a waiting standby's, a group's): pid, in_recovery, the marker found
   * (null or empty when none), settings applied (null when refused: a hot standby, or a marker
   * already there), database, then the route (as in {@link #tryLock}). Binds: settings names,
   * values.
   */
  public static String open() {
    return "SELECT f.pid, f.in_recovery, f.marker, "
        + applySettingsWhen("NOT f.in_recovery AND coalesce(f.marker, '') = ''")
        + ", pg_catalog.current_database()"
        + ROUTE
        + " FROM (SELECT pg_catalog.pg_backend_pid() AS pid,"
        + " pg_catalog.pg_is_in_recovery() AS in_recovery, pg_catalog.current_setting('"
        + MARKER
        + "', true) AS marker OFFSET 0) f";
  }

  /**
   * One blocking wait under {@code lock_timeout}, and, once granted, everything a takeover needs in
   * the same round trip: pid, in_recovery, already_held, granted; then, only once granted (each
   * guarded by {@code CASE}, evaluated after the inner query took the lock): the two restored
   * settings, the fallback's flush (null for the full token, see {@link #fencingToken}), the
   * token's redo, xid8 and timeline, the seconds the server spent in the statement before the token
   * (its own clock, for the proof of liveness), the term's {@code application_name} (the token in
   * it, {@link Notices}) and the {@code acquired} notice, delivered at the commit. While it waits,
   * no xid is assigned and nothing is written. The already-held check runs in the same statement,
   * before every wait, and so does the read of the key's holder among the candidates' sessions
   * (column 12, {@link #candidateHolder}); since that read takes the statement's snapshot of {@code
   * pg_stat_activity}, the grant drops it before the look for a preferred candidate, which must see
   * who waits now. Binds: the term name's prefix, the key id, the candidate; lock_timeout,
   * statement_timeout to restore; in the fallback the token's message; key arguments; key locks
   * twice.
   *
   * @param key the key
   * @param full whether the server supports the full token ({@link TokenMode})
   * @return the statement
   */
  public static String waitLock(LockKey key, boolean full) {
    return STANDBY_WAIT
        + " SELECT y.pid, y.in_recovery, y.already, y.locked, y.lt, y.st, y.fl, y.redo, y.xid, y.tl,"
        + " y.took, y.holder, CASE WHEN y.locked THEN pg_catalog.set_config('application_name', "
        + Notices.termNameSql("('#' || y.tok)")
        + ", false) END, CASE WHEN y.locked THEN "
        + Notices.acquiredSql("?::text", "y.pid", "y.tok")
        + " END, CASE WHEN y.locked AND ?::bool THEN "
        + PREFERRED_WAITING
        + " END FROM (SELECT x.*, CASE WHEN x.locked THEN "
        + TokenMode.form("x.tl", "x.redo", "x.xid")
        + " END AS tok FROM (SELECT w.pid, w.in_recovery, w.already, w.locked, w.holder, CASE WHEN"
        + " w.locked THEN pg_catalog.pg_stat_clear_snapshot()::text END AS fresh, CASE WHEN"
        + " w.locked THEN pg_catalog.set_config('lock_timeout', ?::text, false) END AS lt, CASE WHEN w.locked"
        + " THEN pg_catalog.set_config('statement_timeout', ?::text, false) END AS st, "
        + (full
            ? "NULL::text AS fl"
            : "CASE WHEN w.locked THEN pg_catalog.set_config('synchronous_commit', 'local', true)"
                + " || pg_catalog.pg_logical_emit_message(true, 'retsu-lock-fence', ?::text)::text"
                + " END AS fl")
        + ", CASE WHEN w.locked THEN pg_catalog.pg_current_xact_id()::text END AS xid, CASE WHEN"
        + " w.locked THEN "
        + TokenMode.timeline(full)
        + " END AS tl, CASE WHEN w.locked THEN "
        + TokenMode.redo(full)
        + " END AS redo, CASE WHEN w.locked THEN pg_catalog.date_part('epoch',"
        + " pg_catalog.clock_timestamp() - pg_catalog.statement_timestamp()) END AS took FROM"
        + " (SELECT t.pid, t.in_recovery, t.already, t.holder, CASE WHEN t.in_recovery OR t.already"
        + " THEN false ELSE pg_catalog.pg_advisory_lock("
        + KeySql.arguments(key)
        + ")::text = '' END AS locked FROM (SELECT pg_catalog.pg_backend_pid() AS pid,"
        + " pg_catalog.pg_is_in_recovery() AS in_recovery, "
        + heldByThisBackend(key)
        + " AS already, "
        + candidateHolder(key)
        + " AS holder OFFSET 0) t OFFSET 0) w OFFSET 0) x OFFSET 0) y";
  }

  /**
   * The pid of the session of the candidates' role that holds the key, or 0 (an int expression,
   * read before the statement waits): the only session whose {@code released} notice can tell a
   * waiter that the term it waited behind ended gracefully. Binds: key locks.
   */
  private static String candidateHolder(LockKey key) {
    return "coalesce((SELECT l.pid FROM pg_catalog.pg_locks l JOIN pg_catalog.pg_stat_activity a"
        + " ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted AND l.mode ="
        + " 'ExclusiveLock' AND l.database = "
        + THIS_DATABASE
        + " AND "
        + KeySql.pgLocksPredicate(key, "l")
        + " AND "
        + candidateRole("a", null)
        + " LIMIT 1), 0)";
  }

  /**
   * Tries many keys on our own session: pid, in_recovery, marker, the ordinals (1-based) of the
   * keys granted. Nothing is locked unless the backend is the one recorded at open, is a primary
   * and carries our marker, all checked in the same statement before any lock. Binds: the four key
   * arrays, expected pid, our marker, the most keys to take.
   */
  public static String tryLockBatch() {
    return "SELECT f.pid, f.in_recovery, f.marker, (SELECT coalesce(pg_catalog.array_agg(g.ord ORDER"
        + " BY g.ord), '{}') FROM (SELECT k.ord::int4 AS ord FROM "
        + KeySql.KEYS
        + " WHERE CASE WHEN f.pid = ? AND NOT f.in_recovery AND f.marker = ? THEN CASE WHEN"
        + " k.pair THEN pg_catalog.pg_try_advisory_lock(k.a, k.b) ELSE"
        + " pg_catalog.pg_try_advisory_lock(k.v) END ELSE false END LIMIT ?) g) FROM (SELECT"
        + " pg_catalog.pg_backend_pid() AS pid, pg_catalog.pg_is_in_recovery() AS in_recovery,"
        + " coalesce(pg_catalog.current_setting('"
        + MARKER
        + "', true), '') AS marker OFFSET 0) f";
  }

  /**
   * Unlocks keys this session holds: pid, the ordinals of keys that were not held. Binds: the four
   * key arrays.
   */
  public static String unlockBatch() {
    return "SELECT pg_catalog.pg_backend_pid(), (SELECT coalesce(pg_catalog.array_agg(u.ord::int4"
        + " ORDER BY u.ord) FILTER (WHERE NOT u.ok), '{}') FROM (SELECT k.ord, CASE WHEN k.pair"
        + " THEN pg_catalog.pg_advisory_unlock(k.a, k.b) ELSE pg_catalog.pg_advisory_unlock(k.v)"
        + " END AS ok FROM "
        + KeySql.KEYS
        + " OFFSET 0) u)";
  }

  /** The O(1) proof: pid, marker. No binds. */
  public static String quickProof() {
    return "SELECT pg_catalog.pg_backend_pid(), pg_catalog.current_setting('" + MARKER + "', true)";
  }

  /**
   * The full proof, one {@code pg_locks} read for the whole session: pid, the marker as found, the
   * advisory locks this backend holds in this database as three arrays (classid, objid, objsubid),
   * and, only when the marker is not ours ({@code RESET ALL} or {@code DISCARD} ran), the settings
   * applied again. Binds: settings names, values; our marker.
   */
  public static String fullProof() {
    return "SELECT f.pid, f.marker, o.classids, o.objids, o.objsubids, "
        + applySettingsWhen("f.marker IS DISTINCT FROM f.expected")
        + " FROM (SELECT pg_catalog.pg_backend_pid() AS pid, pg_catalog.current_setting('"
        + MARKER
        + "', true) AS marker, ?::text AS expected OFFSET 0) f, LATERAL (SELECT"
        + " pg_catalog.array_agg(l.classid::int8) AS classids, pg_catalog.array_agg(l.objid::int8)"
        + " AS objids, pg_catalog.array_agg(l.objsubid::int4) AS objsubids FROM pg_catalog.pg_locks"
        + " l WHERE l.pid = f.pid AND l.locktype = 'advisory' AND l.granted AND l.database = "
        + THIS_DATABASE
        + ") o";
  }

  /**
   * The fencing token: xid8 (text), timeline, redo (numeric), pid, the term's {@code
   * application_name} (the token in it), and one {@code acquired} notice per key announced (their
   * count). The full token ({@link TokenMode}) writes only the commit record its xid needs and
   * waits for no flush and no standby: a crash that loses that commit restarts under a larger redo
   * position. The fallback (0, 0, xid8) flushes its commit (a transactional WAL message, with
   * synchronous_commit {@code local} for it, so never a standby) so that a crash cannot hand the
   * xid out again. The notices are delivered at the commit. Binds: the term name's prefix; the
   * candidate; the ids of the keys to announce (text array); in the fallback the message text.
   *
   * @param full whether the server supports the full token ({@link TokenMode})
   * @return the statement
   */
  public static String fencingToken(boolean full) {
    return "SELECT t.xid, t.tl, t.redo, t.pid, pg_catalog.set_config('application_name', "
        + Notices.termNameSql("('#' || t.tok)")
        + ", false), (SELECT pg_catalog.count("
        + Notices.acquiredSql("n.id", "t.pid", "t.tok")
        + ") FROM unnest(?::text[]) AS n(id)) FROM (SELECT u.xid, u.tl, u.redo, u.pid, "
        + TokenMode.form("u.tl", "u.redo", "u.xid")
        + " AS tok FROM (SELECT pg_catalog.pg_current_xact_id()::text AS xid, "
        + TokenMode.timeline(full)
        + " AS tl, "
        + TokenMode.redo(full)
        + " AS redo, pg_catalog.pg_backend_pid() AS pid"
        + (full
            ? ""
            : ", pg_catalog.set_config('synchronous_commit', 'local', true) AS sc FROM"
                + " pg_catalog.pg_logical_emit_message(true, 'retsu-lock-fence', ?)")
        + " OFFSET 0) u OFFSET 0) t";
  }

  /**
   * The {@code released} notices of keys about to be released gracefully, one statement: pid.
   * Binds: the payloads as one text, one per line. Its commit does not wait for the WAL flush
   * ({@code synchronous_commit} off for this transaction alone): a notice is delivered once its
   * transaction commits, flushed or not, a crash ends every listener's session anyway, and a
   * successor waiting for the key would otherwise wait for that flush too.
   */
  public static String released() {
    return "SELECT pg_catalog.pg_backend_pid(), pg_catalog.set_config('synchronous_commit', 'off',"
        + " true), (SELECT pg_catalog.count(pg_catalog.pg_notify('"
        + Notices.CHANNEL
        + "', p.payload)::text) FROM pg_catalog.unnest(pg_catalog.string_to_array(?::text, E'\\n'))"
        + " AS p(payload))";
  }

  /**
   * {@link #released()} committed in a transaction of its own, then every advisory lock of the
   * session unlocked, in one round trip (four statements, one answer): for a session that ends
   * right after, so that a successor is granted the key as soon as the notices are committed, not
   * once the server has processed the session's end. The explicit {@code COMMIT} puts the notices
   * in the queue before the unlock can grant the key to anyone, so a listener reads {@code
   * released} before the successor's {@code acquired}. Binds: the payloads, one per line.
   */
  public static String releasedThenUnlockAll() {
    return "BEGIN; " + released() + "; COMMIT; SELECT pg_catalog.pg_advisory_unlock_all()";
  }

  /**
   * Whether a preferred candidate's WAIT standby waits for a lock this session holds: the pid of
   * one such session, or 0. It looks at {@code pg_stat_activity} for sessions named {@code
   * retsu-lock-preferred:*} in this database (visible to every role) that are of this session's own
   * login role (any role can name itself preferred: a name alone counts for nothing) and asks
   * {@code pg_blocking_pids} only of those, so with no preferred candidate waiting it never touches
   * the lock manager, and its cost does not grow with the lock table.
   *
   * @param c the leader's session
   * @return the pid, or 0
   * @throws SQLException when the statement failed
   */
  public static int preferredWaiting(java.sql.Connection c) throws java.sql.SQLException {
    try (java.sql.Statement st = c.createStatement();
        java.sql.ResultSet rs = st.executeQuery("SELECT " + PREFERRED_WAITING)) {
      rs.next();
      return rs.getInt(1);
    }
  }
}
