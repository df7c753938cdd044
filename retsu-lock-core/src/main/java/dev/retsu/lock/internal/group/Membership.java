package dev.retsu.lock.internal.group;

import dev.retsu.lock.LockKey;
import dev.retsu.lock.internal.session.Session;
import dev.retsu.lock.internal.session.SessionSql;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A group's membership, without a table: each member holds one advisory lock {@code (ns, slot)} in
 * the group's namespace ({@code ns} the first 4 bytes of SHA-256("retsu-lock-group:" + name),
 * big-endian) on its first session, one of {@value #SLOTS} slots. Reading the membership probes
 * each slot in shared mode (a free slot is taken and given back at once, a held one refuses), so
 * its cost does not grow with the number of locks on the server. Each member's watch session also
 * holds the group's watchers key {@code (ns, }{@value #SLOTS}{@code )} in shared mode, so the
 * sessions that may speak for the group on its channel are known from {@code pg_locks}, which only
 * the server writes (see {@link #memberSessions}). A slot counts as a member only while a session
 * of the candidates' role holds it. Thread-safe.
 */
public final class Membership {

  /** The most members of one group. */
  public static final int SLOTS = 256;

  private static final SecureRandom RANDOM = new SecureRandom();

  private static final Logger LOG = LoggerFactory.getLogger(Membership.class);

  private final int namespace;

  /**
   * The membership of one group.
   *
   * @param groupName the group's name
   */
  public Membership(String groupName) {
    try {
      byte[] d =
          MessageDigest.getInstance("SHA-256")
              .digest(("retsu-lock-group:" + groupName).getBytes(StandardCharsets.UTF_8));
      this.namespace = ByteBuffer.wrap(d, 0, 4).getInt();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }

  /** The group's namespace: the first part of its membership slots' keys. */
  int namespace() {
    return namespace;
  }

  /**
   * Marks the calling session as a watch session of the group: a shared-mode try on the watchers
   * key {@code (ns, }{@value #SLOTS}{@code )}, which every member's watch session holds at once. It
   * fails only while another session holds or waits for that key in exclusive mode.
   *
   * @param c the watch session's connection
   * @return true when the session holds the key now
   * @throws SQLException when the statement failed
   */
  boolean markWatcher(Connection c) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement("SELECT pg_catalog.pg_try_advisory_lock_shared(?::int4, ?::int4)")) {
      ps.setInt(1, namespace);
      ps.setInt(2, SLOTS);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getBoolean(1);
      }
    }
  }

  /**
   * The backend pids of the group's member sessions, read from {@code pg_locks} (written by the
   * server): sessions that hold a membership slot or the watchers key in this database, and log in
   * as the candidates' role (the asking session's own). A session of any other role is not a member
   * whatever it holds or names itself. One {@code pg_locks} read: the watch runs it only when a
   * notice came from a pid it does not know, at a bounded rate.
   *
   * @param c the watch session's connection
   * @return the pids
   * @throws SQLException when the statement failed
   */
  Set<Integer> memberSessions(Connection c) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT DISTINCT l.pid FROM pg_catalog.pg_locks l JOIN pg_catalog.pg_stat_activity a"
                + " ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2"
                + " AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname ="
                + " pg_catalog.current_database()) AND l.classid = ?::int4::oid"
                + " AND l.objid::int8 <= ?::int8 AND "
                + SessionSql.candidateRole("a", null))) {
      ps.setInt(1, namespace);
      ps.setLong(2, SLOTS);
      try (ResultSet rs = ps.executeQuery()) {
        Set<Integer> out = new HashSet<>();
        while (rs.next()) {
          out.add(rs.getInt(1));
        }
        return out;
      }
    }
  }

  /** The key that stands for the group in messages: {@code (ns, 0)}. */
  public LockKey groupKey() {
    return LockKey.of(namespace, 0);
  }

  /**
   * Takes the first free slot, scanning round the ring from a random start (so members joining at
   * once rarely try the same slots), one exclusive try per slot until one succeeds.
   *
   * @param s the member's first session
   * @return the slot taken, or -1 when every slot is held
   * @throws SQLException when the statement failed
   */
  int take(Session s) throws SQLException {
    return s.call(
        c -> {
          try (PreparedStatement ps =
              c.prepareStatement(
                  "SELECT s.slot FROM (SELECT ((?::int4 + g) % ?::int4)::int4 AS slot FROM"
                      + " pg_catalog.generate_series(0, ?::int4 - 1) g) s WHERE"
                      + " pg_catalog.pg_try_advisory_lock(?::int4, s.slot) LIMIT 1")) {
            ps.setInt(1, RANDOM.nextInt(SLOTS));
            ps.setInt(2, SLOTS);
            ps.setInt(3, SLOTS);
            ps.setInt(4, namespace);
            try (ResultSet rs = ps.executeQuery()) {
              return rs.next() ? rs.getInt(1) : -1;
            }
          }
        });
  }

  /**
   * Whether one membership slot is free: a shared-mode try, given back at once (no wait).
   *
   * @param c the watching session's connection
   * @param slot the slot
   * @return true when no member holds it
   * @throws SQLException when the statement failed
   */
  boolean isFree(Connection c, int slot) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT pg_catalog.pg_try_advisory_lock_shared(?::int4, ?::int4) AND"
                + " pg_catalog.pg_advisory_unlock_shared(?::int4, ?::int4)")) {
      ps.setInt(1, namespace);
      ps.setInt(2, slot);
      ps.setInt(3, namespace);
      ps.setInt(4, slot);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getBoolean(1);
      }
    }
  }

  /**
   * The held slots, ascending: a shared-mode try on each slot; the caller's own slot is named,
   * because a session's own lock never refuses it.
   *
   * @param s the member's first session
   * @param own this member's slot, or -1
   * @return the members' slots
   * @throws SQLException when the statement failed
   */
  long[] read(Session s, int own) throws SQLException {
    Long[] slots =
        s.call(
            c -> {
              try (PreparedStatement ps =
                  c.prepareStatement(
                      "SELECT coalesce(pg_catalog.array_agg(s::int8 ORDER BY s), '{}') FROM"
                          + " pg_catalog.generate_series(0, ?::int4 - 1) s WHERE s = ?::int4 OR"
                          + " NOT (pg_catalog.pg_try_advisory_lock_shared(?::int4, s) AND"
                          + " pg_catalog.pg_advisory_unlock_shared(?::int4, s))")) {
                ps.setInt(1, SLOTS);
                ps.setInt(2, own);
                ps.setInt(3, namespace);
                ps.setInt(4, namespace);
                try (ResultSet rs = ps.executeQuery()) {
                  rs.next();
                  return (Long[]) rs.getArray(1).getArray();
                }
              }
            });
    long[] out = new long[slots.length];
    for (int i = 0; i < slots.length; i++) {
      out[i] = slots[i];
    }
    Verified last = verified.get();
    if (last != null && last.own == own && Arrays.equals(last.held, out)) {
      return last.members.clone();
    }
    long[] members =
        out.length == 0 || (out.length == 1 && out[0] == own) ? out : members(s, out, own);
    verified.set(new Verified(own, out, members));
    return members.clone();
  }

  /** The last slots seen held, and those of them held by the candidates' role. */
  private record Verified(int own, long[] held, long[] members) {}

  private final AtomicReference<Verified> verified = new AtomicReference<>();

  /**
   * Of the slots seen held, those held by a session of the candidates' role (and the own one): a
   * session of any other role can lock a slot too (DESIGN invariant 9), and counting it as a member
   * would shrink every member's share. One {@code pg_locks} read, only when the held slots changed
   * since the last read.
   */
  private long[] members(Session s, long[] held, int own) throws SQLException {
    Long[] slots =
        s.call(
            c -> {
              try (PreparedStatement ps =
                  c.prepareStatement(
                      "SELECT coalesce(pg_catalog.array_agg(DISTINCT l.objid::int8), '{}') FROM"
                          + " pg_catalog.pg_locks l JOIN pg_catalog.pg_stat_activity a ON a.pid ="
                          + " l.pid WHERE l.locktype = 'advisory' AND l.granted AND l.mode ="
                          + " 'ExclusiveLock' AND l.objsubid = 2 AND l.classid = ?::int8::oid AND"
                          + " l.objid::int8 = ANY (?::int8[]) AND l.database = (SELECT d.oid FROM"
                          + " pg_catalog.pg_database d WHERE d.datname ="
                          + " pg_catalog.current_database()) AND "
                          + SessionSql.candidateRole("a", null))) {
                ps.setLong(1, Integer.toUnsignedLong(namespace));
                Long[] boxed = new Long[held.length];
                for (int i = 0; i < held.length; i++) {
                  boxed[i] = held[i];
                }
                ps.setArray(2, c.createArrayOf("int8", boxed));
                try (ResultSet rs = ps.executeQuery()) {
                  rs.next();
                  return (Long[]) rs.getArray(1).getArray();
                }
              }
            });
    Set<Long> trusted = new HashSet<>(Arrays.asList(slots));
    long[] out = new long[held.length];
    int n = 0;
    for (long slot : held) {
      if (slot == own || trusted.contains(slot)) {
        out[n++] = slot;
      }
    }
    if (n < held.length) {
      LOG.warn(
          "Group namespace {}: {} membership slot(s) held by sessions outside the candidates' role;"
              + " not counted as members",
          namespace,
          held.length - n);
    }
    return Arrays.copyOf(out, n);
  }
}
