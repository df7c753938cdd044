package dev.retsu.lock;

import java.time.Instant;
import java.util.Objects;

/**
 * One continuous leadership of one candidate.
 *
 * @param number this loop's term counter, 1 for its first term
 * @param key the lock key
 * @param candidateId the leader
 * @param start when the lock was acquired (the loop's wall clock)
 * @param fencingToken the term's fencing token, greater than every earlier term's on this cluster
 * @param backendPid the backend pid of the session holding the lock
 * @param serverPath how that session reaches the server: directly or through a proxy, which decides
 *     what frees the lock of a leader that vanished ({@link ServerPath})
 */
public record Term(
    long number,
    LockKey key,
    String candidateId,
    Instant start,
    FencingToken fencingToken,
    int backendPid,
    ServerPath serverPath) {

  /**
   * A term whose session's path is not known ({@link ServerPath#UNKNOWN}).
   *
   * @param number positive
   * @param key not null
   * @param candidateId not null
   * @param start not null
   * @param fencingToken not null
   * @param backendPid the pid
   */
  public Term(
      long number,
      LockKey key,
      String candidateId,
      Instant start,
      FencingToken fencingToken,
      int backendPid) {
    this(number, key, candidateId, start, fencingToken, backendPid, ServerPath.UNKNOWN);
  }

  /**
   * Validates the components.
   *
   * @param number positive
   * @param key not null
   * @param candidateId not null
   * @param start not null
   * @param fencingToken not null
   * @param backendPid the pid
   * @param serverPath not null
   */
  public Term {
    if (number < 1) {
      throw new IllegalArgumentException("number must be positive, but was " + number);
    }
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(candidateId, "candidateId");
    Objects.requireNonNull(start, "start");
    Objects.requireNonNull(fencingToken, "fencingToken");
    Objects.requireNonNull(serverPath, "serverPath");
  }
}
