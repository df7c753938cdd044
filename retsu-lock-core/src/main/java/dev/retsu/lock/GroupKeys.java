package dev.retsu.lock;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Keys as the group's SQL takes them (four parallel arrays, see {@link GroupSql}), keys as {@code
 * pg_locks} shows them, and the group's membership namespace. Thread-safe (stateless).
 */
final class GroupKeys {

  private GroupKeys() {}

  /** Binds the four key arrays from {@code index}; returns the next free index. */
  static int bind(Connection conn, PreparedStatement ps, int index, List<LockKey> keys)
      throws SQLException {
    Long[] values = new Long[keys.size()];
    Integer[] firsts = new Integer[keys.size()];
    Integer[] seconds = new Integer[keys.size()];
    Boolean[] pairs = new Boolean[keys.size()];
    for (int i = 0; i < keys.size(); i++) {
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
   * The keys a {@code pg_locks} read shows, from its {@code classid}, {@code objid} and {@code
   * objsubid} columns (oids read as unsigned 32-bit values); rows of other kinds are skipped.
   */
  static Set<LockKey> fromPgLocks(Long[] classids, Long[] objids, Integer[] objsubids) {
    Set<LockKey> out = new HashSet<>();
    if (classids == null) {
      return out;
    }
    for (int i = 0; i < classids.length; i++) {
      long hi = classids[i];
      long lo = objids[i];
      if (objsubids[i] == 1) {
        out.add(LockKey.of((hi << 32) | lo));
      } else if (objsubids[i] == 2) {
        out.add(LockKey.of((int) hi, (int) lo));
      }
    }
    return out;
  }

  /**
   * The group's membership namespace: the first part of the two-part keys its members hold, the
   * first 4 bytes of SHA-256 of {@code "retsu-lock-group:" + name}, big-endian.
   */
  static int membershipNamespace(String groupName) {
    try {
      byte[] d =
          MessageDigest.getInstance("SHA-256")
              .digest(("retsu-lock-group:" + groupName).getBytes(StandardCharsets.UTF_8));
      return ByteBuffer.wrap(d, 0, 4).getInt();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }
}
