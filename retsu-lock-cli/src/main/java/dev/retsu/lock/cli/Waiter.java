package dev.retsu.lock.cli;

import dev.retsu.lock.LockKey;
import dev.retsu.lock.internal.session.HolderSql;
import dev.retsu.lock.internal.session.KeySql;
import dev.retsu.lock.internal.session.Notices;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A session queued on a key: a {@code pg_locks} row not granted ({@link HolderSql#waiters}). Its
 * {@code application_name} names a candidate only when the session is of the candidates' role; any
 * other queued session is foreign, whatever its name says.
 *
 * @param position its place in the queue, from 1 (the next to be granted the key)
 * @param pid the backend pid
 * @param candidateId the candidate its name gives, empty when foreign or no candidate's name
 * @param preferred whether its name is a preferred standby's ({@code retsu-lock-preferred:})
 * @param foreign whether it is a session outside the candidates' role
 * @param role the role it logged in as, if its session is still there to read it
 * @param mode the lock mode it asks for ({@code ExclusiveLock}, {@code ShareLock})
 * @param waitingSince when it began to wait, if the server has recorded it yet
 * @param applicationName its application_name, as it named itself (empty when gone)
 */
record Waiter(
    int position,
    int pid,
    Optional<String> candidateId,
    boolean preferred,
    boolean foreign,
    Optional<String> role,
    String mode,
    Optional<Instant> waitingSince,
    Optional<String> applicationName) {

  /**
   * Reads the sessions queued on a key, in queue order.
   *
   * @param conn where
   * @param key the key
   * @param candidateRole the candidates' role, or null for the connection's own login role
   * @return the queued sessions, the next to be granted first
   * @throws SQLException when the query fails
   */
  static List<Waiter> read(Connection conn, LockKey key, String candidateRole) throws SQLException {
    List<Waiter> out = new ArrayList<>();
    try (PreparedStatement ps = conn.prepareStatement(HolderSql.waiters(key, candidateRole))) {
      KeySql.bindLocks(ps, 1, key);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          String name = rs.getString(2);
          boolean foreign = rs.getBoolean(4);
          Optional<Notices.Name> parsed = foreign ? Optional.empty() : Notices.parseName(name);
          out.add(
              new Waiter(
                  out.size() + 1,
                  rs.getInt(1),
                  parsed.map(Notices.Name::candidateId),
                  parsed.map(Notices.Name::preferred).orElse(false),
                  foreign,
                  Optional.ofNullable(rs.getString(3)),
                  rs.getString(5),
                  Optional.ofNullable(rs.getObject(6, OffsetDateTime.class))
                      .map(OffsetDateTime::toInstant),
                  Optional.ofNullable(name)));
        }
      }
    }
    return out;
  }

  /** Who it is, for people: a candidate id, or what it is when it is none. */
  String who() {
    if (foreign) {
      return "foreign session (role " + role.orElse("unknown") + ")";
    }
    return candidateId
        .map(c -> preferred ? c + " (preferred)" : c)
        .orElse("(not a retsu-lock candidate)");
  }

  Json json() {
    return new Json()
        .num("position", position)
        .num("pid", pid)
        .str("candidate", candidateId)
        .bool("preferred", preferred)
        .bool("foreign", foreign)
        .str("role", role)
        .str("mode", mode)
        .time("waitingSince", waitingSince)
        .str("applicationName", applicationName);
  }
}
