package dev.retsu.lock.internal.session;

import java.util.Locale;
import java.util.regex.Pattern;

/**
 * The one rule for SQL text that may release a session's advisory locks or reset the session, for
 * every recipe. A session advisory lock ends only with its session, by {@code pg_advisory_unlock*}
 * run on that session, or by {@code DISCARD ALL}; {@code RESET ALL} and {@code DISCARD} clear the
 * server-side bounds and the session marker. Text that may do any of it makes the next check a full
 * ownership proof, at every execution of a statement prepared from it:
 *
 * <ul>
 *   <li>{@code unlock}, {@code discard}, {@code reset} anywhere (a function name, a command);
 *   <li>{@code u&}: a Unicode-escaped identifier or string, which can spell any of them;
 *   <li>the word {@code execute}: a server-side prepared statement run by name, or dynamic SQL in a
 *       {@code DO} block;
 *   <li>the marker's own name, which user code could set to a forged value.
 * </ul>
 *
 * <p>Text matching narrows the window; it cannot close it: a function whose body unlocks carries
 * none of these words. The ownership proof that runs at least every {@code heartbeatInterval} while
 * the session is used bounds what text cannot see. A false positive costs one round trip.
 * Stateless, thread-safe.
 */
public final class SuspectSql {

  private static final Pattern SUSPECT =
      Pattern.compile("unlock|discard|reset|u&|\\bexecute\\b|" + Pattern.quote(SessionSql.MARKER));

  private SuspectSql() {}

  /**
   * Whether text sent to the session may release its locks or reset it.
   *
   * @param sql the SQL text as the caller gave it
   * @return true when the next check must read {@code pg_locks}
   */
  public static boolean mayRelease(String sql) {
    return sql != null && SUSPECT.matcher(sql.toLowerCase(Locale.ROOT)).find();
  }
}
