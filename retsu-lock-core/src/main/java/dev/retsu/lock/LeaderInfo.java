package dev.retsu.lock;

import dev.retsu.lock.internal.session.Holders;
import dev.retsu.lock.internal.session.SelfFence;
import dev.retsu.lock.internal.session.Session;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import javax.sql.DataSource;

/**
 * Who leads a key, shaped like a lease: the holder, its session, its term and token, and how fresh
 * it is. From three places:
 *
 * <ul>
 *   <li>{@link LeaderLoop#leaderInfo()} and {@link LeaderGroup#leaderInfo(LockKey)}: the
 *       candidate's own term, everything present;
 *   <li>{@link LeaderWatch}: what a watcher in any process learned from a leader's {@code acquired}
 *       notice (candidate, pid, token; {@code acquiredAt} is when the watch received it) or from a
 *       read of {@code pg_locks} when it started or reconnected;
 *   <li>{@link #of(DataSource, LockKey)}: one query from any process, any role (and {@link
 *       #of(DataSource, Collection)} for many keys in one query).
 * </ul>
 *
 * <p>From SQL, the token is what the leader's session shows in its {@code application_name} ({@code
 * retsu-lock:<candidate>#<timeline>/<xid>}, set by the statement that took the token), and {@code
 * lastRenewal} is that session's {@code pg_stat_activity.state_change} (its last statement, at
 * least every {@code heartbeatInterval} for a leader). {@code pg_locks} and the {@code pid}, {@code
 * datname} and {@code application_name} columns of {@code pg_stat_activity} are visible to every
 * role; {@code state_change} of another role's session is visible only to a role with {@code
 * pg_read_all_stats} (or a superuser), and is empty otherwise. Immutable.
 *
 * @param key the key
 * @param candidateId the leader's candidate id (cut to what {@code application_name} keeps when
 *     read from SQL; empty string for a session that is not a retsu-lock candidate's)
 * @param pid the leader's backend pid ({@code pg_terminate_backend(pid)} evicts it)
 * @param database the database the lock is in
 * @param token the term's fencing token; empty for a holder that took none (a plain {@link
 *     AdvisoryLockLease}, or a session that is not a candidate's)
 * @param term the leader's own term number; only from the leader itself
 * @param acquiredAt when the term started: the leader's clock for its own term, the watch's clock
 *     when an {@code acquired} notice arrived; empty from SQL (PostgreSQL records no grant time)
 * @param lastRenewal the start of the last round trip that proved the leader's session alive (its
 *     own term), or its session's {@code state_change} (SQL, privileged); else empty
 * @param validUntil the self-fencing deadline: the leader stops acting by then unless its session
 *     proves alive again; only from the leader itself
 */
public record LeaderInfo(
    LockKey key,
    String candidateId,
    int pid,
    String database,
    Optional<FencingToken> token,
    OptionalLong term,
    Optional<Instant> acquiredAt,
    Optional<Instant> lastRenewal,
    Optional<Instant> validUntil) {

  /**
   * Validates the components.
   *
   * @param key not null
   * @param candidateId not null
   * @param pid the pid
   * @param database not null
   * @param token not null
   * @param term not null
   * @param acquiredAt not null
   * @param lastRenewal not null
   * @param validUntil not null
   */
  public LeaderInfo {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(candidateId, "candidateId");
    Objects.requireNonNull(database, "database");
    Objects.requireNonNull(token, "token");
    Objects.requireNonNull(term, "term");
    Objects.requireNonNull(acquiredAt, "acquiredAt");
    Objects.requireNonNull(lastRenewal, "lastRenewal");
    Objects.requireNonNull(validUntil, "validUntil");
  }

  /**
   * Reads who holds a key right now, with one query ({@code pg_locks} joined with {@code
   * pg_stat_activity}) on a connection borrowed from {@code dataSource} and given back.
   *
   * @param dataSource where to ask; any role can
   * @param key the key
   * @return the holder, or empty when nobody holds the key
   * @throws AdvisoryLockException if the query fails (the SQLException is the cause)
   */
  public static Optional<LeaderInfo> of(DataSource dataSource, LockKey key) {
    Objects.requireNonNull(dataSource, "dataSource");
    Objects.requireNonNull(key, "key");
    return Holders.leader(dataSource, key);
  }

  /**
   * Reads who holds each of many keys right now (a group's keys, say), with one query ({@code
   * pg_locks} joined with {@code pg_stat_activity}) on a connection borrowed from {@code
   * dataSource} and given back, whatever the number of keys.
   *
   * @param dataSource where to ask; any role can
   * @param keys the keys, at least one
   * @return the holder of each key that is held; keys nobody holds are absent
   * @throws IllegalArgumentException if {@code keys} is empty
   * @throws AdvisoryLockException if the query fails (the SQLException is the cause)
   */
  public static Map<LockKey, LeaderInfo> of(DataSource dataSource, Collection<LockKey> keys) {
    Objects.requireNonNull(dataSource, "dataSource");
    Objects.requireNonNull(keys, "keys");
    if (keys.isEmpty()) {
      throw new IllegalArgumentException("keys must name at least one key, but was empty");
    }
    List<LockKey> list = List.copyOf(keys);
    try (Connection conn = dataSource.getConnection()) {
      return Map.copyOf(Holders.leaders(conn, list));
    } catch (SQLException e) {
      throw new AdvisoryLockException(
          "Cannot read the leaders of " + list.size() + " keys (SQLState " + e.getSQLState() + ")",
          list.get(0),
          Holders.READER,
          e);
    }
  }

  /** A candidate's own term. */
  static LeaderInfo ofTerm(Term t, Session session) {
    SelfFence fence = session.proofs().fence();
    long deadline = fence.wallDeadlineMillis();
    return new LeaderInfo(
        t.key(),
        t.candidateId(),
        t.backendPid(),
        session.id().database(),
        Optional.of(t.fencingToken()),
        OptionalLong.of(t.number()),
        Optional.of(t.start()),
        Optional.of(Instant.ofEpochMilli(deadline - fence.window().toMillis())),
        Optional.of(Instant.ofEpochMilli(deadline)));
  }
}
