package dev.retsu.lock;

/**
 * Every SQL text the library sends, written once. Each statement that takes a lock also checks, in
 * the same statement and before locking, that the server is a primary and that this backend does
 * not already hold the key (a shared backend, as behind a transaction-mode pooler, would grant it
 * again). Every function is schema-qualified, so a user's search_path cannot shadow it. Keys and
 * values are always bound parameters. (The two-array {@code unnest} in FROM is syntax, not a
 * function, so it cannot be qualified.) Thread-safe (stateless).
 */
final class SessionSql {

  private SessionSql() {}

  /** Whether this backend already holds the key; binds {@link LockKey#bindLocks}. */
  static String heldByThisBackend(LockKey key) {
    return "EXISTS (SELECT 1 FROM pg_catalog.pg_locks l WHERE l.locktype = 'advisory' AND"
        + " l.granted AND l.pid = pg_catalog.pg_backend_pid() AND l.database = (SELECT d.oid FROM"
        + " pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database()) AND "
        + key.pgLocksPredicate("l")
        + ")";
  }

  /**
   * Applies the session settings (names and values as two text arrays) when {@code condition}
   * holds, in the statement that took the lock: a client that dies right after the grant leaves the
   * lock under our keepalives, never the OS defaults. Returns the names applied (settings the
   * server does not know are skipped).
   */
  private static String applySettingsWhen(String condition) {
    return "CASE WHEN "
        + condition
        + " THEN (SELECT coalesce(pg_catalog.array_agg(v.name ORDER BY v.ord), '{}')"
        + " FROM unnest(?::text[], ?::text[]) WITH ORDINALITY AS v(name, value, ord)"
        + " WHERE "
        + condition
        + " AND CASE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_settings p WHERE p.name = v.name)"
        + " THEN pg_catalog.set_config(v.name, v.value, false) IS NOT NULL ELSE false END)"
        + " END";
  }

  /** The session marker: a custom setting that RESET ALL and DISCARD ALL clear. */
  static final String MARKER = "retsu.lock_session";

  /**
   * One attempt: pid, in_recovery, already_held, locked, settings applied (null unless locked),
   * database, marker set (null unless locked). A shared-mode try comes first: when another session
   * holds the key (the common answer of a standby) the attempt costs O(1) and never reads {@code
   * pg_locks}; only when the key looks free does it check that this backend does not already hold
   * it. (Our own locks never conflict with us, so a key this backend holds still looks free there,
   * and the exact check still runs.) Binds: settings names, values; the marker; key arguments; key
   * locks; key arguments twice.
   */
  static String tryLock(LockKey key) {
    return "SELECT s.pid, s.in_recovery, s.already, s.locked, "
        + applySettingsWhen("s.locked")
        + ", pg_catalog.current_database(), CASE WHEN s.locked THEN pg_catalog.set_config('"
        + MARKER
        + "', ?::text, false) END FROM (SELECT t.pid, t.in_recovery, t.already, CASE WHEN"
        + " t.in_recovery OR t.already OR NOT t.free THEN false ELSE"
        + " pg_catalog.pg_try_advisory_lock("
        + key.sqlArguments()
        + ") END AS locked FROM (SELECT f.pid, f.in_recovery, f.free, CASE WHEN f.free THEN "
        + heldByThisBackend(key)
        + " ELSE false END AS already FROM (SELECT pg_catalog.pg_backend_pid() AS pid,"
        + " pg_catalog.pg_is_in_recovery() AS in_recovery, CASE WHEN"
        + " pg_catalog.pg_is_in_recovery() THEN false ELSE"
        + " pg_catalog.pg_try_advisory_lock_shared("
        + key.sqlArguments()
        + ") AND pg_catalog.pg_advisory_unlock_shared("
        + key.sqlArguments()
        + ") END AS free OFFSET 0) f OFFSET 0) t OFFSET 0) s";
  }

  /**
   * One blocking wait under {@code lock_timeout}: pid, in_recovery, already_held, granted, and
   * (only once granted) the two restored settings. The already-held check runs in the same
   * statement, before every wait. Once the lock is granted, the same statement puts {@code
   * lock_timeout} and {@code statement_timeout} back to the session's own values, so a takeover
   * needs no round trip of its own for that (a wait that ends in {@code lock_timeout} fails before
   * it, and its transaction undoes nothing else). Binds: lock_timeout, statement_timeout to
   * restore; key arguments; key locks.
   */
  static String waitLock(LockKey key) {
    return "SELECT w.pid, w.in_recovery, w.already, w.locked, CASE WHEN w.locked THEN"
        + " pg_catalog.set_config('lock_timeout', ?::text, false) END, CASE WHEN w.locked THEN"
        + " pg_catalog.set_config('statement_timeout', ?::text, false) END FROM (SELECT t.pid,"
        + " t.in_recovery, t.already, CASE WHEN t.in_recovery OR t.already THEN false ELSE"
        + " pg_catalog.pg_advisory_lock("
        + key.sqlArguments()
        + ")::text = '' END AS locked FROM ("
        + backendFacts(key)
        + ") t OFFSET 0) w";
  }

  /**
   * Prepares a waiting session: pid, in_recovery, settings applied, database, marker. Binds:
   * settings names, values; the marker. Only a session that belongs to the waiter (never returned
   * to a pool) runs it.
   */
  static String prepareWaiter() {
    return "SELECT pg_catalog.pg_backend_pid(), pg_catalog.pg_is_in_recovery(), "
        + applySettingsWhen("true")
        + ", pg_catalog.current_database(), pg_catalog.set_config('"
        + MARKER
        + "', ?::text, false)";
  }

  private static String backendFacts(LockKey key) {
    return "SELECT pg_catalog.pg_backend_pid() AS pid, pg_catalog.pg_is_in_recovery() AS"
        + " in_recovery, "
        + heldByThisBackend(key)
        + " AS already OFFSET 0";
  }

  /**
   * The full ownership proof: pid, held (from {@code pg_locks}), marker intact. Binds: key locks;
   * the marker.
   */
  static String ownership(LockKey key) {
    return "SELECT pg_catalog.pg_backend_pid(), " + heldByThisBackend(key) + ", " + markerIntact();
  }

  /**
   * The O(1) ownership proof, sound only while nothing but the library has used the session since
   * the last full proof: a session lock ends only with its session or by an unlock that session
   * runs, so the same live backend with its marker intact still holds every lock it held. pid,
   * marker intact. Binds the marker.
   */
  static String sameSession() {
    return "SELECT pg_catalog.pg_backend_pid(), " + markerIntact();
  }

  private static String markerIntact() {
    return "coalesce(pg_catalog.current_setting('" + MARKER + "', true) = ?::text, false)";
  }

  /**
   * The fencing token: xid8, timeline, (setting), pid. The transactional WAL message makes the
   * commit flush synchronously (with synchronous_commit forced on for it), so a crash cannot hand
   * this xid out again. Binds the message text.
   */
  static String fencingToken() {
    return "SELECT pg_catalog.pg_current_xact_id()::text::bigint,"
        + " ('x' || pg_catalog.substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1,"
        + " 8))::bit(32)::int, pg_catalog.set_config('synchronous_commit', 'on', true),"
        + " pg_catalog.pg_backend_pid()"
        + " FROM pg_catalog.pg_logical_emit_message(true, 'retsu-lock-fence', ?)";
  }

  /** The holder: pid, application_name, usename, client address, backend start, database. */
  static String currentHolder(LockKey key) {
    return "SELECT l.pid, a.application_name, a.usename, pg_catalog.host(a.client_addr), a.backend_start,"
        + " pg_catalog.current_database() FROM pg_catalog.pg_locks l LEFT JOIN"
        + " pg_catalog.pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND"
        + " l.granted AND l.mode = 'ExclusiveLock' AND l.database = (SELECT d.oid FROM"
        + " pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database()) AND "
        + key.pgLocksPredicate("l");
  }
}
