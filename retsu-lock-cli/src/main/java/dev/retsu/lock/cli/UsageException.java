package dev.retsu.lock.cli;

/** Bad command-line input: the message names the value and what is allowed. Exit code 2. */
final class UsageException extends Exception {

  private static final long serialVersionUID = 1L;

  UsageException(String message) {
    super(message);
  }
}
