package dev.retsu.lock;

/**
 * Every SQL text a {@link LeaderGroup} sends, written once (the single-key texts stay in {@link
 * SessionSql}; the fencing token is shared from there). Keys travel as four parallel arrays, one
 * element per key: {@code int8} value, {@code int4} first part, {@code int4} second part, {@code
 * bool} two-part flag (see {@link GroupKeys}). Every function is schema-qualified; every key and
 * value is a bound parameter. Thread-safe (stateless).
 *
 * <p>The session marker {@value #MARKER} is a custom setting that only our own session sets. It
 * makes the O(1) ownership proof possible: PostgreSQL releases a session advisory lock only when
 * the session ends or that same session unlocks it ({@code pg_advisory_unlock*}, {@code DISCARD
 * ALL}); {@code DISCARD ALL} and {@code RESET ALL} also clear the marker. A backend that already
 * carries a marker before we set one belongs to another group or lease: a shared backend, as behind
 * a transaction-mode pooler.
 */
final class GroupSql {

  /** The custom setting that marks a session as a group's (or lease's) own. */
  static final String MARKER = "retsu.lock_session";

  private GroupSql() {}

  private static final String KEYS =
      "unnest(?::int8[], ?::int4[], ?::int4[], ?::bool[]) WITH ORDINALITY AS k(v, a, b, pair, ord)";

  private static final String THIS_DATABASE =
      "(SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname ="
          + " pg_catalog.current_database())";

  /**
   * Applies the session settings (names, values: two text arrays) and the marker; settings the
   * server does not know are skipped, the marker always set. Returns the names applied.
   */
  private static String applySettings() {
    return "(SELECT coalesce(pg_catalog.array_agg(v.name ORDER BY v.ord), '{}')"
        + " FROM unnest(?::text[], ?::text[]) WITH ORDINALITY AS v(name, value, ord)"
        + " WHERE CASE WHEN v.name = '"
        + MARKER
        + "' OR EXISTS (SELECT 1 FROM pg_catalog.pg_settings p WHERE p.name = v.name)"
        + " THEN pg_catalog.set_config(v.name, v.value, false) IS NOT NULL ELSE false END)";
  }

  /**
   * Opens a group session: pid, in_recovery, the marker found (null or empty when none), settings
   * applied (null when refused: a hot standby, or a marker already there), database. Binds:
   * settings names, values (the marker among them).
   */
  static String open() {
    return "SELECT f.pid, f.in_recovery, f.marker, CASE WHEN NOT f.in_recovery AND"
        + " coalesce(f.marker, '') = '' THEN "
        + applySettings()
        + " END, pg_catalog.current_database() FROM (SELECT pg_catalog.pg_backend_pid() AS pid,"
        + " pg_catalog.pg_is_in_recovery() AS in_recovery, pg_catalog.current_setting('"
        + MARKER
        + "', true) AS marker OFFSET 0) f";
  }

  /**
   * Tries many keys in one statement: pid, in_recovery, marker, the ordinals (1-based) of the keys
   * granted. Nothing is locked unless the backend is the one recorded at open, is a primary and
   * carries our marker, all checked in the same statement before any lock. Binds: expected pid, our
   * marker value, the four key arrays.
   */
  static String tryLockBatch() {
    return "SELECT f.pid, f.in_recovery, f.marker, (SELECT coalesce(pg_catalog.array_agg(g.ord ORDER"
        + " BY g.ord), '{}') FROM (SELECT k.ord::int4 AS ord FROM "
        + KEYS
        + " WHERE CASE WHEN f.pid = ? AND NOT f.in_recovery AND f.marker = ? THEN CASE WHEN"
        + " k.pair THEN pg_catalog.pg_try_advisory_lock(k.a, k.b) ELSE"
        + " pg_catalog.pg_try_advisory_lock(k.v) END ELSE false END LIMIT ?) g) FROM (SELECT"
        + " pg_catalog.pg_backend_pid() AS pid, pg_catalog.pg_is_in_recovery() AS in_recovery,"
        + " coalesce(pg_catalog.current_setting('"
        + MARKER
        + "', true), '') AS marker OFFSET 0) f";
  }

  /**
   * Unlocks many keys held by this session: pid, the ordinals of keys that were not held. Binds:
   * the four key arrays.
   */
  static String unlockBatch() {
    return "SELECT pg_catalog.pg_backend_pid(), (SELECT coalesce(pg_catalog.array_agg(u.ord::int4 ORDER"
        + " BY u.ord) FILTER (WHERE NOT u.ok), '{}') FROM (SELECT k.ord, CASE WHEN k.pair THEN"
        + " pg_catalog.pg_advisory_unlock(k.a, k.b) ELSE pg_catalog.pg_advisory_unlock(k.v) END"
        + " AS ok FROM "
        + KEYS
        + " OFFSET 0) u)";
  }

  /** The O(1) proof: pid, marker. No binds. */
  static String quickProof() {
    return "SELECT pg_catalog.pg_backend_pid(), pg_catalog.current_setting('" + MARKER + "', true)";
  }

  /**
   * The full proof, one {@code pg_locks} read for the whole session: pid, marker as found, then the
   * advisory locks this backend holds as three arrays (classid, objid, objsubid), and the settings
   * applied again (a {@code RESET ALL} through user SQL clears them with the marker). Binds:
   * settings names, values.
   */
  static String fullProof() {
    return "SELECT f.pid, f.marker, (SELECT pg_catalog.array_agg(l.classid::int8 ORDER BY l.objid)"
        + " FROM pg_catalog.pg_locks l WHERE "
        + ownAdvisory()
        + "), (SELECT pg_catalog.array_agg(l.objid::int8 ORDER BY l.objid) FROM pg_catalog.pg_locks"
        + " l WHERE "
        + ownAdvisory()
        + "), (SELECT pg_catalog.array_agg(l.objsubid::int4 ORDER BY l.objid) FROM"
        + " pg_catalog.pg_locks l WHERE "
        + ownAdvisory()
        + "), "
        + applySettings()
        + " FROM (SELECT pg_catalog.pg_backend_pid() AS pid, pg_catalog.current_setting('"
        + MARKER
        + "', true) AS marker OFFSET 0) f";
  }

  private static String ownAdvisory() {
    return "l.pid = pg_catalog.pg_backend_pid() AND l.locktype = 'advisory' AND l.granted AND"
        + " l.database = "
        + THIS_DATABASE;
  }

  /**
   * Takes the first free membership slot, scanning the {@code slots} slots from {@code start} round
   * the ring, one exclusive try per slot until one succeeds (LIMIT 1 stops the scan there): the
   * slot taken, or no row when every slot is held. Binds: start, slots, slots, group namespace
   * (int4).
   */
  static String takeMembership() {
    return "SELECT s.slot FROM (SELECT ((?::int4 + g) % ?::int4)::int4 AS slot FROM"
        + " pg_catalog.generate_series(0, ?::int4 - 1) g) s WHERE"
        + " pg_catalog.pg_try_advisory_lock(?::int4, s.slot) LIMIT 1";
  }

  /**
   * The members of a group: the held slots, ascending, found by a shared-mode try on each slot
   * (taken and given back at once when the slot is free, refused when a member holds it). The cost
   * is one lock-table probe per slot, whatever the number of locks on the server; the former {@code
   * pg_locks} read copied the whole lock table. The caller's own slot is named, because a session's
   * own lock never refuses it. Binds: slots (int4), own slot (int4), group namespace (int4) twice.
   */
  static String members() {
    return "SELECT coalesce(pg_catalog.array_agg(s::int8 ORDER BY s), '{}') FROM"
        + " pg_catalog.generate_series(0, ?::int4 - 1) s WHERE s = ?::int4 OR NOT"
        + " (pg_catalog.pg_try_advisory_lock_shared(?::int4, s) AND"
        + " pg_catalog.pg_advisory_unlock_shared(?::int4, s))";
  }
}
