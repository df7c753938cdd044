package dev.retsu.lock.examples.app;

/** A bad setting: the message names the variable or flag and the value, and is shown as is. */
public final class ConfigException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message shown to the operator as is
   */
  public ConfigException(String message) {
    super(message);
  }
}
