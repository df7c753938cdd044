package dev.retsu.lock;

import dev.retsu.lock.internal.session.Notices;
import java.time.Instant;
import java.util.Optional;

/**
 * Who holds a lock right now, from {@code pg_locks} joined with {@code pg_stat_activity}. A role
 * without {@code pg_read_all_stats} that differs from the holder's role sees the pid, user and
 * application name, but not the client address or start time: those come back empty.
 *
 * <p>The application name is written by the session itself, so it names a candidate only when the
 * session is of the candidates' role (the role the reading data source logs in as; the server
 * records each session's role). Any other holder is {@linkplain #foreign() foreign}: {@link
 * #candidateId()} and {@link #fencingToken()} are empty whatever its name claims, and the read logs
 * a WARN.
 *
 * @param pid the holder's backend pid ({@code pg_terminate_backend(pid)} evicts it)
 * @param applicationName the holder's {@code application_name}; retsu-lock sets {@code
 *     retsu-lock:<candidate id>}, and {@code retsu-lock:<candidate id>#<token>} ({@link
 *     FencingToken#toString()}) from the statement that takes a term's fencing token on
 * @param user the holder's database user, or null if not visible
 * @param clientAddress the holder's client address, if visible
 * @param since when the holder's session started, if visible
 * @param database the database the lock is in: advisory locks are per database, so candidates
 *     connected to two databases of one cluster do not exclude each other
 * @param foreign true when the holder's session is not of the candidates' role: it is no
 *     candidate's, whatever its application name says
 */
public record LockHolder(
    int pid,
    String applicationName,
    String user,
    Optional<String> clientAddress,
    Optional<Instant> since,
    String database,
    boolean foreign) {

  /**
   * A holder of the candidates' role ({@code foreign} false).
   *
   * @param pid the holder's backend pid
   * @param applicationName the holder's {@code application_name}
   * @param user the holder's database user, or null if not visible
   * @param clientAddress the holder's client address, if visible
   * @param since when the holder's session started, if visible
   * @param database the database the lock is in
   */
  public LockHolder(
      int pid,
      String applicationName,
      String user,
      Optional<String> clientAddress,
      Optional<Instant> since,
      String database) {
    this(pid, applicationName, user, clientAddress, since, database, false);
  }

  /**
   * Returns the candidate id, when the holder is a retsu-lock candidate: a session of the
   * candidates' role that names one; empty for a {@linkplain #foreign() foreign} holder.
   *
   * @return the candidate id from the application name
   */
  public Optional<String> candidateId() {
    if (foreign) {
      return Optional.empty();
    }
    return Notices.parseName(applicationName)
        .filter(n -> !n.preferred())
        .map(Notices.Name::candidateId);
  }

  /**
   * Returns the fencing token of the holder's term, when it is a leader's session that took one (it
   * shows it in its {@code application_name}); empty for a {@linkplain #foreign() foreign} holder.
   *
   * @return the token
   */
  public Optional<FencingToken> fencingToken() {
    if (foreign) {
      return Optional.empty();
    }
    return Notices.parseName(applicationName).flatMap(Notices.Name::token);
  }
}
