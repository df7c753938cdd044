package dev.retsu.lock.internal.session;

import dev.retsu.lock.LockKey;

/**
 * The read side of "who holds a key", written once: the holders of keys, the sessions queued on a
 * key, and which of the watch's leaders still live. A holder's name counts only with the
 * candidates' role ({@link SessionSql#candidateRole}). Every function is schema-qualified and every
 * value bound, as in {@link SessionSql}. Stateless, thread-safe.
 */
public final class HolderSql {

  private HolderSql() {}

  /**
   * Which granted {@code pg_locks} rows (alias {@code l}, with {@code a} its {@code
   * pg_stat_activity}) hold a key against the candidates: an exclusive lock, or a shared one of a
   * session outside the candidates' role (it blocks every candidate as surely). A shared lock of
   * the candidates' role is a standby's momentary probe, not a hold.
   */
  private static String holds(String role) {
    return "(l.mode = 'ExclusiveLock' OR NOT " + SessionSql.candidateRole("a", role) + ")";
  }

  /**
   * The {@code pg_stat_activity} row (alias {@code a}) of the lock row {@code lock}'s session, read
   * after the lock table: a subquery that cannot be flattened runs once per lock row, so the
   * server's lock table ({@code pg_locks}, read in full at its first row) is always the older of
   * the two reads. A session that ends between them has released its locks before its row goes (the
   * server releases a session's locks before it clears its activity entry): the row is missing and
   * {@link #sessionStillThere} drops it, instead of showing a holder that let go as one of an
   * unknown, foreign role. In the other order a session that took a key after the activity read
   * would be missing as well, and would be shown as foreign whatever its role.
   */
  private static String activityAfter(String lock) {
    return " LEFT JOIN LATERAL (SELECT s.pid, s.usesysid, s.usename, s.application_name,"
        + " s.state_change, s.client_addr, s.backend_start FROM pg_catalog.pg_stat_activity s"
        + " WHERE s.pid = "
        + lock
        + ".pid OFFSET 0) a ON true";
  }

  /**
   * A lock row's session is still there: it has its activity row, or it is no session (a prepared
   * transaction's lock has no pid, and is shown as a foreign holder).
   */
  private static String sessionStillThere(String lock) {
    return "(" + lock + ".pid IS NULL OR a.pid IS NOT NULL)";
  }

  /** {@link #holders(String)} for the asking session's own role. */
  public static String holders() {
    return holders(null);
  }

  /**
   * Who holds each of many keys, one {@code pg_locks} read: classid, objid, objsubid (as {@code
   * pg_locks} shows the key), pid, application_name, state_change, database, foreign (the holder's
   * session is not of the candidates' role, {@link #candidateRole}: its name counts for nothing),
   * its login role's name. Binds: the four key arrays.
   *
   * @param role the candidates' role, or null for the asking session's own
   * @return the statement
   */
  public static String holders(String role) {
    return "SELECT l.classid::int8, l.objid::int8, l.objsubid::int4, l.pid, a.application_name,"
        + " a.state_change, pg_catalog.current_database(), l.mode <> 'ExclusiveLock' OR NOT "
        + SessionSql.candidateRole("a", role)
        + ", a.usename FROM pg_catalog.pg_locks l"
        + activityAfter("l")
        + " WHERE l.locktype = 'advisory' AND l.granted AND "
        + sessionStillThere("l")
        + " AND "
        + holds(role)
        + " AND l.database = "
        + SessionSql.THIS_DATABASE
        + " AND (l.classid, l.objid, l.objsubid) IN (SELECT CASE WHEN k.pair THEN k.a::int8 &"
        + " 4294967295 ELSE (k.v >> 32) & 4294967295 END::oid, CASE WHEN k.pair THEN k.b::int8 &"
        + " 4294967295 ELSE k.v &"
        + " 4294967295 END::oid, CASE WHEN k.pair THEN 2 ELSE 1 END::int2 FROM "
        + KeySql.KEYS
        + ")";
  }

  /**
   * The sessions queued on a key ({@code pg_locks} rows not granted), in queue order: pid,
   * application_name, usename, foreign (the session is not of the candidates' role, {@link
   * #candidateRole}: its name counts for nothing), the lock mode requested, when it began to wait
   * ({@code pg_locks.waitstart}), and how many of the key's other queued sessions are ahead of it.
   * {@code pg_locks} has no order; the count comes from the lock manager itself: {@code
   * pg_blocking_pids} of a waiting session names the holder and every session queued ahead of it
   * with a conflicting request. Ties (shared requests do not conflict) go by {@code waitstart},
   * then pid. One read of {@code pg_locks}; one {@code pg_blocking_pids} call per queued session.
   * Binds: key locks.
   *
   * @param key the key
   * @param role the candidates' role, or null for the asking session's own
   * @return the statement
   */
  public static String waiters(LockKey key, String role) {
    return "WITH w AS MATERIALIZED (SELECT l.pid, l.mode, l.waitstart FROM pg_catalog.pg_locks l"
        + " WHERE l.locktype = 'advisory' AND NOT l.granted AND l.database = "
        + SessionSql.THIS_DATABASE
        + " AND "
        + KeySql.pgLocksPredicate(key, "l")
        + ") SELECT w.pid, a.application_name, a.usename, NOT "
        + SessionSql.candidateRole("a", role)
        + ", w.mode, w.waitstart, (SELECT pg_catalog.count(DISTINCT v.pid) FROM w v WHERE v.pid"
        + " = ANY (b.pids))::int4 AS ahead FROM w"
        + activityAfter("w")
        + " CROSS JOIN LATERAL (SELECT pg_catalog.pg_blocking_pids(w.pid) AS pids OFFSET 0) b"
        + " WHERE "
        + sessionStillThere("w")
        + " ORDER BY ahead, w.waitstart NULLS LAST, w.pid";
  }

  /**
   * The sessions still alive among pids: pid, application_name (one read of {@code
   * pg_stat_activity}, whose size is the number of sessions, never the lock table's). Binds: the
   * pids (int4 array).
   */
  public static String alive() {
    return "SELECT a.pid, a.application_name FROM pg_catalog.pg_stat_activity a WHERE a.pid ="
        + " ANY (?::int4[])";
  }
}
