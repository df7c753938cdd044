package dev.retsu.lock.internal.session;

import dev.retsu.lock.LockKey;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Keys as the library's SQL takes them: one key as the advisory lock functions' arguments and as a
 * {@code pg_locks} predicate, many keys as four parallel arrays (one element per key: {@code int8}
 * value, {@code int4} first part, {@code int4} second part, {@code bool} two-part flag), and keys
 * as {@code pg_locks} shows them ({@code classid}, {@code objid} read as unsigned 32-bit values;
 * {@code objsubid} 1 for a {@code bigint} key, 2 for a two-part key). Stateless, thread-safe.
 */
public final class KeySql {

  /** The four key arrays, unnested with their ordinals. */
  static final String KEYS =
      "unnest(?::int8[], ?::int4[], ?::int4[], ?::bool[]) WITH ORDINALITY AS k(v, a, b, pair, ord)";

  private KeySql() {}

  /** {@code ?::int8} or {@code ?::int4, ?::int4}: the arguments of the advisory lock functions. */
  static String arguments(LockKey key) {
    return key.isTwoPart() ? "?::int4, ?::int4" : "?::int8";
  }

  /**
   * The {@code pg_locks} predicate for a key on a table alias; bind it with {@link #bindLocks}.
   *
   * @param key the key
   * @param alias the alias of {@code pg_locks}
   * @return the predicate
   */
  public static String pgLocksPredicate(LockKey key, String alias) {
    String a = alias + ".";
    if (key.isTwoPart()) {
      return a
          + "objsubid = 2 AND "
          + a
          + "classid = ?::int4::oid AND "
          + a
          + "objid = ?::int4::oid";
    }
    return a
        + "objsubid = 1 AND "
        + a
        + "classid = ((?::int8 >> 32) & 4294967295)::oid AND "
        + a
        + "objid = (?::int8 & 4294967295)::oid";
  }

  /** Binds {@link #arguments} from {@code index}; returns the next free index. */
  public static int bindArguments(PreparedStatement ps, int index, LockKey key)
      throws SQLException {
    if (key.isTwoPart()) {
      ps.setInt(index, key.first());
      ps.setInt(index + 1, key.second());
      return index + 2;
    }
    ps.setLong(index, key.value());
    return index + 1;
  }

  /**
   * Binds {@link #pgLocksPredicate} from {@code index}.
   *
   * @param ps the statement
   * @param index the first parameter's index
   * @param key the key
   * @return the next free index
   * @throws SQLException from the driver
   */
  public static int bindLocks(PreparedStatement ps, int index, LockKey key) throws SQLException {
    if (key.isTwoPart()) {
      ps.setInt(index, key.first());
      ps.setInt(index + 1, key.second());
    } else {
      ps.setLong(index, key.value());
      ps.setLong(index + 1, key.value());
    }
    return index + 2;
  }

  /**
   * Binds the four key arrays of {@link #KEYS} from {@code index}.
   *
   * @param conn the connection that makes the arrays
   * @param ps the statement
   * @param index the first parameter index
   * @param keys the keys
   * @return the next free index
   * @throws SQLException when an array cannot be made or bound
   */
  public static int bindArrays(Connection conn, PreparedStatement ps, int index, List<LockKey> keys)
      throws SQLException {
    int n = keys.size();
    Long[] values = new Long[n];
    Integer[] firsts = new Integer[n];
    Integer[] seconds = new Integer[n];
    Boolean[] pairs = new Boolean[n];
    for (int i = 0; i < n; i++) {
      LockKey k = keys.get(i);
      boolean pair = k.isTwoPart();
      values[i] = pair ? 0L : k.value();
      firsts[i] = pair ? k.first() : 0;
      seconds[i] = pair ? k.second() : 0;
      pairs[i] = pair;
    }
    ps.setArray(index, conn.createArrayOf("int8", values));
    ps.setArray(index + 1, conn.createArrayOf("int4", firsts));
    ps.setArray(index + 2, conn.createArrayOf("int4", seconds));
    ps.setArray(index + 3, conn.createArrayOf("bool", pairs));
    return index + 4;
  }

  /**
   * A key as {@code pg_locks} shows it, or null when it is not an advisory key.
   *
   * @param classid {@code classid} as an unsigned value
   * @param objid {@code objid} as an unsigned value
   * @param objsubid 1 for a bigint key, 2 for a two-part key
   * @return the key
   */
  public static LockKey fromPgLocks(long classid, long objid, int objsubid) {
    if (objsubid == 1) {
      return LockKey.of((classid << 32) | objid);
    }
    return objsubid == 2 ? LockKey.of((int) classid, (int) objid) : null;
  }

  /** The keys among {@code expected} that a {@code pg_locks} read of the session does not show. */
  static Set<LockKey> missing(
      Collection<LockKey> expected, Long[] classids, Long[] objids, Integer[] objsubids) {
    Set<LockKey> held = new HashSet<>();
    for (int i = 0; classids != null && i < classids.length; i++) {
      long hi = classids[i];
      long lo = objids[i];
      if (objsubids[i] == 1) {
        held.add(LockKey.of((hi << 32) | lo));
      } else if (objsubids[i] == 2) {
        held.add(LockKey.of((int) hi, (int) lo));
      }
    }
    Set<LockKey> missing = new HashSet<>(expected);
    missing.removeAll(held);
    return missing;
  }
}
