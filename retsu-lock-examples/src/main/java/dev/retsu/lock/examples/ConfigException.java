package dev.retsu.lock.examples;

/** A bad setting: the message names the variable or flag and the value, and is shown as is. */
final class ConfigException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  ConfigException(String message) {
    super(message);
  }
}
