package dev.retsu.lock;

import dev.retsu.lock.internal.Diagnostics;
import java.util.Objects;
import java.util.Optional;

/**
 * A failure of retsu-lock, carrying the lock key and the candidate it happened to. A database
 * failure keeps its {@link java.sql.SQLException} as the cause; {@link #sqlState()} returns its
 * SQLState.
 */
public class AdvisoryLockException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  /** The key, kept as text so the exception stays serializable. */
  private final String key;

  private final String candidateId;

  /**
   * Creates an exception.
   *
   * @param message what went wrong, without the context (it is appended)
   * @param key the lock key
   * @param candidateId the candidate
   * @param cause the cause, may be null
   */
  public AdvisoryLockException(String message, LockKey key, String candidateId, Throwable cause) {
    super(message + " " + Diagnostics.context(key, candidateId), cause);
    this.key = Objects.requireNonNull(key, "key").toString();
    this.candidateId = Objects.requireNonNull(candidateId, "candidateId");
  }

  /**
   * Returns the lock key, as {@link LockKey#toString()} shows it.
   *
   * @return the key
   */
  public String lockKey() {
    return key;
  }

  /**
   * Returns the candidate id.
   *
   * @return the candidate
   */
  public String candidateId() {
    return candidateId;
  }

  /**
   * Returns the SQLState of the first {@link java.sql.SQLException} in the cause chain.
   *
   * @return the SQLState, if the failure came from the database
   */
  public Optional<String> sqlState() {
    return Optional.ofNullable(Diagnostics.sqlState(getCause()));
  }
}
