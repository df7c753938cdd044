package dev.retsu.lock.spring.integration;

import java.time.Duration;
import java.util.Objects;

/** Argument checks with messages that name the value and the rule. */
final class Checks {

  private Checks() {}

  static String notBlank(String name, String value) {
    Objects.requireNonNull(value, name);
    if (value.isBlank()) {
      throw new IllegalArgumentException(name + " must not be blank, but was '" + value + "'");
    }
    return value;
  }

  static Duration atLeast(String name, Duration value, Duration least) {
    Objects.requireNonNull(value, name);
    if (value.compareTo(least) < 0 || value.compareTo(Duration.ofDays(24)) > 0) {
      throw new IllegalArgumentException(
          name + " must be from " + least + " to 24 days, but was " + value);
    }
    return value;
  }
}
