package dev.retsu.lock;

import dev.retsu.lock.internal.Checks;
import java.sql.SQLException;

/** Formatting helpers for messages and logs, and the one rule for "this session ended". */
final class Diagnostics {

  private Diagnostics() {}

  static String shorten(String text) {
    return Checks.shorten(text);
  }

  static String context(LockKey key, String candidateId) {
    return "[lock=" + key + ", candidate=" + candidateId + "]";
  }

  static String sqlState(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof SQLException && ((SQLException) c).getSQLState() != null) {
        return ((SQLException) c).getSQLState();
      }
    }
    return null;
  }

  /**
   * Whether an SQLState says the session is gone, and with it every session lock: connection
   * exceptions (08xxx), administrator or crash shutdown and termination (57P01, 57P02, 57P03),
   * {@code idle_session_timeout} (57P05), {@code idle_in_transaction_session_timeout} (25P03) and
   * {@code transaction_timeout} (25P04).
   */
  static boolean isSessionLost(String sqlState) {
    return sqlState != null
        && (sqlState.startsWith("08")
            || sqlState.equals("57P01")
            || sqlState.equals("57P02")
            || sqlState.equals("57P03")
            || sqlState.equals("57P05")
            || sqlState.equals("25P03")
            || sqlState.equals("25P04"));
  }
}
