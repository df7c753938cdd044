package dev.retsu.lock.internal;

import dev.retsu.lock.LockKey;
import java.sql.SQLException;

/** Formatting helpers for messages and logs, and the one rule for "this session ended". */
public final class Diagnostics {

  private Diagnostics() {}

  /**
   * The prefix of every log line and message about one candidate of one key.
   *
   * @param key the key
   * @param candidateId the candidate
   * @return {@code [lock=<key>, candidate=<id>]}
   */
  public static String context(LockKey key, String candidateId) {
    return "[lock=" + key + ", candidate=" + candidateId + "]";
  }

  /**
   * The SQLState of the first SQLException in a cause chain.
   *
   * @param t the throwable
   * @return its SQLState, or null
   */
  public static String sqlState(Throwable t) {
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
   *
   * @param sqlState an SQLState, or null
   * @return true if the session is gone
   */
  public static boolean isSessionLost(String sqlState) {
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
