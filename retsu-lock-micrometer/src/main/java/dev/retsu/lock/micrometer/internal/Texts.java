package dev.retsu.lock.micrometer.internal;

import dev.retsu.lock.LockKey;
import java.util.Locale;

/**
 * Formatting helpers for tag values and messages. The log prefix is core's ({@code
 * LeaderLoop.logPrefix()}). {@link #shorten} follows the same rule as core's messages (control
 * characters escaped, 120 characters at most); core keeps its copy internal rather than make a text
 * utility part of its API. Stateless; thread-safe.
 */
public final class Texts {

  private static final int MAX = 120;

  private Texts() {}

  /**
   * Shortens long text and shows control characters, so a bad input cannot flood a log.
   *
   * @param text any text, or null
   * @return the text for a message, {@code null} shown as {@code null}
   */
  public static String shorten(String text) {
    if (text == null) {
      return "null";
    }
    StringBuilder sb = new StringBuilder();
    int limit = Math.min(text.length(), MAX);
    for (int i = 0; i < limit; i++) {
      char c = text.charAt(i);
      if (Character.isISOControl(c)) {
        sb.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
      } else {
        sb.append(c);
      }
    }
    if (text.length() > MAX) {
      sb.append("...(").append(text.length()).append(" chars)");
    }
    return sb.toString();
  }

  /**
   * Quotes a queue name for a message.
   *
   * @param name the name, possibly null
   * @return {@code "name"} shortened, or {@code null}
   */
  public static String quote(String name) {
    return name == null ? "null" : "\"" + shorten(name) + "\"";
  }

  /**
   * The short, stable tag value of a key: {@code 0x0a1b2c3d4e5f6071} for a {@code bigint} key,
   * {@code 0x0000002a:0x00000007} for a two-part key.
   *
   * @param key the key
   * @return the key in hex
   */
  public static String hex(LockKey key) {
    return key.isTwoPart()
        ? String.format(Locale.ROOT, "0x%08x:0x%08x", key.first(), key.second())
        : String.format(Locale.ROOT, "0x%016x", key.value());
  }

  /**
   * A tag value for an enum constant: its name in lower case.
   *
   * @param value the constant
   * @return e.g. {@code held_elsewhere}
   */
  public static String tagValue(Enum<?> value) {
    return value.name().toLowerCase(Locale.ROOT);
  }
}
