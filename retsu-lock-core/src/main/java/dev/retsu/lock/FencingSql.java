package dev.retsu.lock;

import dev.retsu.lock.internal.session.SessionSql;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * Checks a fencing token from any session on the leader's database, in SQL: whether token T is
 * still the term that holds key K. A leader's session shows its term's token in its {@code
 * application_name} ({@code retsu-lock:<candidate>#<token>}, the token's comparable form, set by
 * the very statement that took the token), so one read of {@code pg_locks} joined with {@code
 * pg_stat_activity} answers it, with nothing installed:
 *
 * <pre>{@code
 * String sql = "UPDATE invoice SET state = 'sent' WHERE id = ? AND "
 *     + FencingSql.isCurrent(key, ctx.fencingToken());
 * }</pre>
 *
 * A write from a leader whose term ended (its session lost, another term took the key, or a
 * failover to a replica, whose sessions are all new) then changes nothing.
 *
 * <p>A session writes its own {@code application_name}, and any role that can connect can queue on
 * the key under a leader's name and token and be granted it once that leader's session ends. So the
 * check also requires the holder's session to be of the candidates' role (the role it logged in as,
 * which the server records): by default the role of the session that runs the statement (a leader's
 * own write runs as the candidates' role), or the role named with {@link #isCurrent(LockKey,
 * FencingToken, String)} for writes made under another role. A holder of any other role never
 * passes, whatever its name. Limits:
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
   * current database, in a session of the candidates' role: the role of the session that evaluates
   * it ({@code SESSION_USER}, the role it logged in as). Every value in it is a number the library
   * formats: no binds, nothing to escape.
   *
   * @param key the key
   * @param token the term's token
   * @return the expression
   */
  public static String isCurrent(LockKey key, FencingToken token) {
    return expression(key, token, null);
  }

  /**
   * A boolean SQL expression, true while the term that took {@code token} holds {@code key} in the
   * current database, in a session that logged in as {@code candidateRole}: for a write made under
   * another role than the candidates'. The role name is written into the expression as a quoted
   * literal.
   *
   * @param key the key
   * @param token the term's token
   * @param candidateRole the role the candidates log in as
   * @return the expression
   * @throws IllegalArgumentException if {@code candidateRole} is no possible role name (empty,
   *     longer than 63 bytes, or with a backslash or NUL)
   */
  public static String isCurrent(LockKey key, FencingToken token, String candidateRole) {
    return expression(key, token, checkRole(candidateRole));
  }

  /** The role name checked: a PostgreSQL name, quotable as a literal. */
  static String checkRole(String candidateRole) {
    Objects.requireNonNull(candidateRole, "candidateRole");
    if (candidateRole.isEmpty()
        || candidateRole.getBytes(StandardCharsets.UTF_8).length > 63
        || candidateRole.indexOf('\\') >= 0
        || candidateRole.indexOf('\0') >= 0) {
      throw new IllegalArgumentException(
          "candidateRole must be a role name of 1 to 63 bytes without a backslash or NUL, but was \""
              + candidateRole.replace("\0", "\\0")
              + "\"");
    }
    return candidateRole;
  }

  private static String expression(LockKey key, FencingToken token, String role) {
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
        + "' AND "
        + SessionSql.candidateRole("a", role)
        + ")";
  }

  /**
   * The optional function {@code retsu_lock_is_current(key bigint, token text)} (and {@code (first
   * int, second int, token text)}) as a script to run once per database, with a role that may
   * create functions; nothing installs it. {@code UPDATE t SET ... WHERE ... AND
   * retsu_lock_is_current(:key, :token)}. Like {@link #isCurrent(LockKey, FencingToken)} it
   * requires the holder's session to be of the calling session's login role; {@code
   * retsu_lock_is_current_for_role(key, token, candidate_role)} (and {@code (first, second, token,
   * candidate_role)}) names the candidates' role instead.
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
