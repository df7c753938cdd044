package dev.retsu.lock;

import java.sql.SQLException;

/** Formatting helpers for messages and logs. */
final class Diagnostics {

  private static final int MAX = 120;

  private Diagnostics() {}

  /** Shortens long text and shows control characters, so a bad input cannot flood a log. */
  static String shorten(String text) {
    StringBuilder sb = new StringBuilder();
    int limit = Math.min(text.length(), MAX);
    for (int i = 0; i < limit; i++) {
      char c = text.charAt(i);
      if (Character.isISOControl(c)) {
        sb.append(String.format("\\u%04x", (int) c));
      } else {
        sb.append(c);
      }
    }
    if (text.length() > MAX) {
      sb.append("...(").append(text.length()).append(" chars)");
    }
    return sb.toString();
  }

  /** The identity every log line and exception message carries. */
  static String context(LockKey key, String candidateId) {
    return "[lock=" + key + ", candidate=" + candidateId + "]";
  }

  /** The first SQLState found along a cause chain, or null. */
  static String sqlState(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof SQLException && ((SQLException) c).getSQLState() != null) {
        return ((SQLException) c).getSQLState();
      }
    }
    return null;
  }

  /**
   * Whether a SQLState means the session is gone: connection errors (class 08) and the server
   * ending the session (57P01 admin shutdown/terminate, 57P02 crash shutdown, 57P03 cannot connect
   * now, 57P05 idle session timeout).
   */
  static boolean isSessionLost(String sqlState) {
    return sqlState != null
        && (sqlState.startsWith("08")
            || sqlState.equals("57P01")
            || sqlState.equals("57P02")
            || sqlState.equals("57P03")
            || sqlState.equals("57P05"));
  }
}
