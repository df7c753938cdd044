package dev.retsu.lock.internal.session;

import dev.retsu.lock.LockKey;
import java.util.List;
import javax.sql.DataSource;

/**
 * Who a session we own is: where it came from (so its end can evict it from the pool), its backend,
 * and whose it is, for messages.
 *
 * @param dataSource where the session was borrowed
 * @param pid the backend pid recorded at open
 * @param database the database it is in (advisory locks are per database)
 * @param key the lock's key, or the group's membership key, for messages
 * @param candidateId the candidate
 * @param context the prefix of every log line about the session
 * @param applied the settings the server applied, without application_name and the marker
 * @param route how the session reaches the server (through a proxy or not)
 */
public record SessionId(
    DataSource dataSource,
    int pid,
    String database,
    LockKey key,
    String candidateId,
    String context,
    List<String> applied,
    ServerRoute route) {

  /** A session whose route is not known. */
  public SessionId(
      DataSource dataSource,
      int pid,
      String database,
      LockKey key,
      String candidateId,
      String context,
      List<String> applied) {
    this(dataSource, pid, database, key, candidateId, context, applied, ServerRoute.UNKNOWN);
  }
}
