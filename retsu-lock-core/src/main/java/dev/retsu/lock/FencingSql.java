package dev.retsu.lock;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * Checks a fencing token from any session on the leader's database, in SQL: whether token T is
 * still the term that holds key K. A leader's session shows its term's token in its {@code
 * application_name} ({@code retsu-lock:<candidate>#<timeline>/<xid>}, set by the very statement
 * that took the token), so one read of {@code pg_locks} joined with {@code pg_stat_activity}
 * answers it, with nothing installed:
 *
 * <pre>{@code
 * String sql = "UPDATE invoice SET state = 'sent' WHERE id = ? AND "
 *     + FencingSql.isCurrent(key, ctx.fencingToken());
 * }</pre>
 *
 * A write from a leader whose term ended (its session lost, another term took the key, or a
 * failover to a replica, whose sessions are all new) then changes nothing. Limits:
 *
 * <ul>
 *   <li>it reads {@code pg_stat_activity}, which PostgreSQL caches for the rest of a transaction
 *       after its first read there: use it in an autocommit statement or a short transaction;
 *   <li>it costs one read of {@code pg_locks} (the whole lock table) per statement;
 *   <li>a {@link LeaderGroup} session holds many keys whose terms have different tokens, and shows
 *       only its newest: there, compare tokens in the downstream store instead ({@code WHERE
 *       last_token <= :token}, the conditional write of docs/leader-loop.md), or watch the keys
 *       ({@link LeaderWatch});
 *   <li>a holder that took no token (a plain {@link AdvisoryLockLease}) never passes.
 * </ul>
 *
 * <p>{@link #functionScript()} returns an optional {@code retsu_lock_is_current(key, token)}
 * function doing the same; nothing installs it. Stateless.
 */
public final class FencingSql {

  private FencingSql() {}

  /**
   * A boolean SQL expression, true while the term that took {@code token} holds {@code key} in the
   * current database. Every value in it is a number the library formats: no binds, nothing to
   * escape.
   *
   * @param key the key
   * @param token the term's token
   * @return the expression
   */
  public static String isCurrent(LockKey key, FencingToken token) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(token, "token");
    long classid;
    long objid;
    int subid;
    if (key.isTwoPart()) {
      classid = Integer.toUnsignedLong(key.first());
      objid = Integer.toUnsignedLong(key.second());
      subid = 2;
    } else {
      classid = key.value() >>> 32;
      objid = key.value() & 0xffffffffL;
      subid = 1;
    }
    String suffix = "#" + token;
    return "EXISTS (SELECT 1 FROM pg_catalog.pg_locks l JOIN pg_catalog.pg_stat_activity a ON a.pid"
        + " = l.pid WHERE l.locktype = 'advisory' AND l.granted AND l.mode = 'ExclusiveLock' AND"
        + " l.database = (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname ="
        + " pg_catalog.current_database()) AND l.objsubid = "
        + subid
        + " AND l.classid = "
        + classid
        + "::oid AND l.objid = "
        + objid
        + "::oid AND pg_catalog.right(a.application_name, "
        + suffix.length()
        + ") = '"
        + suffix
        + "')";
  }

  /**
   * The optional function {@code retsu_lock_is_current(key bigint, token text)} (and {@code (first
   * int, second int, token text)}) as a script to run once per database, with a role that may
   * create functions; nothing installs it. {@code UPDATE t SET ... WHERE ... AND
   * retsu_lock_is_current(:key, :token)}.
   *
   * @return the script
   */
  public static String functionScript() {
    try (InputStream in = FencingSql.class.getResourceAsStream("retsu_lock_is_current.sql")) {
      if (in == null) {
        throw new IllegalStateException("retsu_lock_is_current.sql is missing from the jar");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
