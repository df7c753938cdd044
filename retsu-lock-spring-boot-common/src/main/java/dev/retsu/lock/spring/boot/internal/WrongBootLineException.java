package dev.retsu.lock.spring.boot.internal;

/**
 * A retsu-lock starter of one Spring Boot line in an application of another: the message is the
 * whole one-line fix, and {@link #description()} and {@link #action()} are its two halves, which
 * {@link WrongBootLineFailureAnalyzer} prints as Spring Boot's "APPLICATION FAILED TO START"
 * report.
 */
public final class WrongBootLineException extends IllegalStateException {

  private static final long serialVersionUID = 1L;

  private final String description;
  private final String action;

  WrongBootLineException(String description, String action) {
    super(description + ": " + action);
    this.description = description;
    this.action = action;
  }

  /**
   * Returns what is wrong: which starter runs on which Spring Boot version.
   *
   * @return the description
   */
  public String description() {
    return description;
  }

  /**
   * Returns the fix: the starter to use instead, or the Spring Boot version to move to.
   *
   * @return the action
   */
  public String action() {
    return action;
  }
}
