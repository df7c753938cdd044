package dev.retsu.lock;

import dev.retsu.lock.internal.session.SelfFence;
import dev.retsu.lock.internal.session.Session;
import dev.retsu.lock.internal.watch.Holders;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.util.Collection;
import java.util.HashMap;
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
 *   <li>{@link LeaderWatch}: what a watcher in any process read from {@code pg_locks} when it
 *       started or reconnected, or when a leader's {@code acquired} notice prompted a read (then
 *       {@code acquiredAt} is when the watch saw it);
 *   <li>{@link #of(DataSource, LockKey)}: one query from any process, any role (and {@link
 *       #of(DataSource, Collection)} for many keys in one query).
 * </ul>
 *
 * <p>From SQL, the token is what the leader's session shows in its {@code application_name} ({@code
 * retsu-lock:<candidate>#<token>}, set by the statement that took the token), and {@code
 * lastRenewal} is that session's {@code pg_stat_activity.state_change} (its last statement, at
 * least every {@code heartbeatInterval} for a leader). {@code pg_locks} and the {@code pid}, {@code
 * datname} and {@code application_name} columns of {@code pg_stat_activity} are visible to every
 * role; {@code state_change} of another role's session is visible only to a role with {@code
 * pg_read_all_stats} (or a superuser), and is empty otherwise.
 *
 * <p>A session's {@code application_name} is written by the session itself, so it names a candidate
 * only when the session is of the candidates' role (the role it logged in as, recorded by the
 * server): the reader's own login role, or the role given to {@link #of(DataSource, LockKey,
 * String)}. A key held by any other session is {@linkplain #foreign() foreign}: its {@code
 * candidateId} is empty and its {@code token} empty whatever its name claims, and the read logs a
 * WARN. Such a session keeps every candidate out until it lets go (the denial of service inherent
 * to advisory locks); an operator evicts it with {@code pg_terminate_backend(pid)} and keeps it out
 * by revoking its role's {@code CONNECT}. Immutable.
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
 *     when it read a term an {@code acquired} notice announced; empty from SQL (PostgreSQL records
 *     no grant time)
 * @param lastRenewal the start of the last round trip that proved the leader's session alive (its
 *     own term), or its session's {@code state_change} (SQL, privileged); else empty
 * @param validUntil the self-fencing deadline: the leader stops acting by then unless its session
 *     proves alive again; only from the leader itself
 * @param foreign true when the holder's session is not of the candidates' role: then it is no
 *     candidate's term, {@code candidateId} is empty and {@code token} empty
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
    Optional<Instant> validUntil,
    boolean foreign) {

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
   * @param foreign whether the holder is outside the candidates' role
   * @throws IllegalArgumentException if a foreign holder names a candidate or a token
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
    if (foreign && (!candidateId.isEmpty() || token.isPresent())) {
      throw new IllegalArgumentException(
          "a foreign holder must name no candidate and no token, but was candidate \""
              + candidateId
              + "\", token "
              + token.map(Object::toString).orElse("none"));
    }
  }

  /**
   * A holder of the candidates' role ({@code foreign} false): a candidate's term, or a session of
   * that role that is none (then {@code candidateId} is empty).
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
  public LeaderInfo(
      LockKey key,
      String candidateId,
      int pid,
      String database,
      Optional<FencingToken> token,
      OptionalLong term,
      Optional<Instant> acquiredAt,
      Optional<Instant> lastRenewal,
      Optional<Instant> validUntil) {
    this(key, candidateId, pid, database, token, term, acquiredAt, lastRenewal, validUntil, false);
  }

  /**
   * Reads who holds a key right now, with one query ({@code pg_locks} joined with {@code
   * pg_stat_activity}) on a connection borrowed from {@code dataSource} and given back.
   *
   * <p>The candidates' role is the role {@code dataSource} logs in as: ask with the candidates' own
   * data source, or name their role with {@link #of(DataSource, LockKey, String)}.
   *
   * @param dataSource where to ask; any role can
   * @param key the key
   * @return the holder, or empty when nobody holds the key
   * @throws AdvisoryLockException if the query fails (the SQLException is the cause)
   */
  public static Optional<LeaderInfo> of(DataSource dataSource, LockKey key) {
    Objects.requireNonNull(dataSource, "dataSource");
    Objects.requireNonNull(key, "key");
    return Holders.leader(dataSource, key, null).map(LeaderInfo::of);
  }

  /**
   * Reads who holds a key right now, as {@link #of(DataSource, LockKey)} does, for candidates that
   * log in as {@code candidateRole} (an operator's or a monitor's read under another role).
   *
   * @param dataSource where to ask; any role can
   * @param key the key
   * @param candidateRole the role the candidates log in as
   * @return the holder, or empty when nobody holds the key
   * @throws IllegalArgumentException if {@code candidateRole} is no possible role name
   * @throws AdvisoryLockException if the query fails (the SQLException is the cause)
   */
  public static Optional<LeaderInfo> of(DataSource dataSource, LockKey key, String candidateRole) {
    Objects.requireNonNull(dataSource, "dataSource");
    Objects.requireNonNull(key, "key");
    return Holders.leader(dataSource, key, FencingSql.checkRole(candidateRole)).map(LeaderInfo::of);
  }

  /**
   * Reads who holds each of many keys right now (a group's keys, say), with one query ({@code
   * pg_locks} joined with {@code pg_stat_activity}) on a connection borrowed from {@code
   * dataSource} and given back, whatever the number of keys. The candidates' role is the role
   * {@code dataSource} logs in as.
   *
   * @param dataSource where to ask; any role can
   * @param keys the keys, at least one
   * @return the holder of each key that is held; keys nobody holds are absent
   * @throws IllegalArgumentException if {@code keys} is empty
   * @throws AdvisoryLockException if the query fails (the SQLException is the cause)
   */
  public static Map<LockKey, LeaderInfo> of(DataSource dataSource, Collection<LockKey> keys) {
    return read(dataSource, keys, null);
  }

  /**
   * Reads who holds each of many keys right now, as {@link #of(DataSource, Collection)} does, for
   * candidates that log in as {@code candidateRole}.
   *
   * @param dataSource where to ask; any role can
   * @param keys the keys, at least one
   * @param candidateRole the role the candidates log in as
   * @return the holder of each key that is held; keys nobody holds are absent
   * @throws IllegalArgumentException if {@code keys} is empty or {@code candidateRole} is no
   *     possible role name
   * @throws AdvisoryLockException if the query fails (the SQLException is the cause)
   */
  public static Map<LockKey, LeaderInfo> of(
      DataSource dataSource, Collection<LockKey> keys, String candidateRole) {
    return read(dataSource, keys, FencingSql.checkRole(candidateRole));
  }

  private static Map<LockKey, LeaderInfo> read(
      DataSource dataSource, Collection<LockKey> keys, String role) {
    Objects.requireNonNull(dataSource, "dataSource");
    Objects.requireNonNull(keys, "keys");
    if (keys.isEmpty()) {
      throw new IllegalArgumentException("keys must name at least one key, but was empty");
    }
    List<LockKey> list = List.copyOf(keys);
    try (Connection conn = dataSource.getConnection()) {
      Map<LockKey, LeaderInfo> out = new HashMap<>();
      Holders.leaders(conn, list, role).forEach((k, row) -> out.put(k, of(row)));
      return Map.copyOf(out);
    } catch (SQLException e) {
      throw new AdvisoryLockException(
          "Cannot read the leaders of " + list.size() + " keys (SQLState " + e.getSQLState() + ")",
          list.get(0),
          Holders.READER,
          e);
    }
  }

  /** A holder as a who-holds read saw it: no term number, no grant time, no deadline. */
  static LeaderInfo of(Holders.Row row) {
    return new LeaderInfo(
        row.key(),
        row.candidateId(),
        row.pid(),
        row.database(),
        row.token(),
        OptionalLong.empty(),
        Optional.empty(),
        row.lastRenewal(),
        Optional.empty(),
        row.foreign());
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
