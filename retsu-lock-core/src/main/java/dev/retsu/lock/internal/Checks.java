package dev.retsu.lock.internal;

import java.time.Duration;
import java.util.Objects;

/**
 * Every validation rule of the public API and its message, written once. Messages state the rule
 * and the value: {@code "retryInterval must be positive, but was PT-1S"}. Null arguments get a
 * {@link NullPointerException} naming the parameter; bad values an {@link
 * IllegalArgumentException}; bad combinations (checked elsewhere) an {@link IllegalStateException}.
 * Thread-safe (stateless).
 */
public final class Checks {

  /** The longest duration any option takes: 24 days (it must fit a socket timeout in ms). */
  public static final Duration MAX_DURATION = Duration.ofDays(24);

  private static final int MAX_CANDIDATE_ID = 100;
  private static final int MAX_SHOWN = 120;

  private Checks() {}

  /**
   * A positive duration of at most {@link #MAX_DURATION}.
   *
   * @param name the option's name, for the message
   * @param d the value
   * @return {@code d}
   */
  public static Duration positive(String name, Duration d) {
    Objects.requireNonNull(d, name);
    if (d.isNegative() || d.isZero()) {
      throw new IllegalArgumentException(name + " must be positive, but was " + d);
    }
    return atMostMax(name, d);
  }

  /**
   * Zero or positive, and at most {@link #MAX_DURATION}.
   *
   * @param name the option's name, for the message
   * @param d the value
   * @return {@code d}
   */
  public static Duration nonNegative(String name, Duration d) {
    Objects.requireNonNull(d, name);
    if (d.isNegative()) {
      throw new IllegalArgumentException(name + " must be zero or positive, but was " + d);
    }
    return atMostMax(name, d);
  }

  /**
   * At least {@code min} and at most {@link #MAX_DURATION}.
   *
   * @param name the option's name
   * @param d the value
   * @param min the least value allowed
   * @return {@code d}
   */
  public static Duration atLeast(String name, Duration d, Duration min) {
    Objects.requireNonNull(d, name);
    if (d.compareTo(min) < 0) {
      throw new IllegalArgumentException(name + " must be at least " + min + ", but was " + d);
    }
    return atMostMax(name, d);
  }

  /**
   * Zero (off) or at least {@code min}, and at most {@link #MAX_DURATION}.
   *
   * @param name the option's name
   * @param d the value
   * @param min the least value allowed when not zero
   * @return {@code d}
   */
  public static Duration zeroOrAtLeast(String name, Duration d, Duration min) {
    Objects.requireNonNull(d, name);
    if (!d.isZero() && d.compareTo(min) < 0) {
      throw new IllegalArgumentException(
          name + " must be zero (off) or at least " + min + ", but was " + d);
    }
    return atMostMax(name, d);
  }

  /**
   * Whole seconds within 1..3600, as PostgreSQL's keepalive settings take.
   *
   * @param name the option's name
   * @param d the value
   * @return {@code d}
   */
  public static Duration wholeSeconds(String name, Duration d) {
    positive(name, d);
    if (d.toNanos() % 1_000_000_000L != 0 || d.toSeconds() > 3600) {
      throw new IllegalArgumentException(
          name + " must be whole seconds within 1..3600, but was " + d);
    }
    return d;
  }

  /**
   * An int within {@code min..max}.
   *
   * @param name the option's name
   * @param value the value
   * @param min least
   * @param max most
   * @return {@code value}
   */
  public static int within(String name, int value, int min, int max) {
    if (value < min || value > max) {
      throw new IllegalArgumentException(
          name + " must be within " + min + ".." + max + ", but was " + value);
    }
    return value;
  }

  /**
   * A fraction within [0, 1).
   *
   * @param name the option's name
   * @param value the value
   * @return {@code value}
   */
  public static double fraction(String name, double value) {
    if (!(value >= 0 && value < 1)) {
      throw new IllegalArgumentException(name + " must be within [0, 1), but was " + value);
    }
    return value;
  }

  /**
   * A candidate id: 1 to 100 printable characters.
   *
   * @param candidateId the value
   * @return {@code candidateId}
   */
  public static String candidateId(String candidateId) {
    Objects.requireNonNull(candidateId, "candidateId");
    if (candidateId.isEmpty()
        || candidateId.length() > MAX_CANDIDATE_ID
        || candidateId.chars().anyMatch(Character::isISOControl)) {
      throw new IllegalArgumentException(
          "candidateId must be 1 to "
              + MAX_CANDIDATE_ID
              + " printable characters, but was \""
              + shorten(candidateId)
              + "\"");
    }
    return candidateId;
  }

  /**
   * A value shown in a message: control characters escaped, cut at 120 characters.
   *
   * @param text the value
   * @return the text to show
   */
  public static String shorten(String text) {
    StringBuilder sb = new StringBuilder();
    int limit = Math.min(text.length(), MAX_SHOWN);
    for (int i = 0; i < limit; i++) {
      char c = text.charAt(i);
      if (Character.isISOControl(c)) {
        sb.append(String.format("\\u%04x", (int) c));
      } else {
        sb.append(c);
      }
    }
    if (text.length() > MAX_SHOWN) {
      sb.append("...(").append(text.length()).append(" chars)");
    }
    return sb.toString();
  }

  private static Duration atMostMax(String name, Duration d) {
    if (d.compareTo(MAX_DURATION) > 0) {
      throw new IllegalArgumentException(
          name + " must be at most " + MAX_DURATION + ", but was " + d);
    }
    return d;
  }
}
