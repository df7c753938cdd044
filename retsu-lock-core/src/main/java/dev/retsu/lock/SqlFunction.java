package dev.retsu.lock;

import java.sql.Connection;
import java.sql.SQLException;

/**
 * Work that runs on a lease's connection.
 *
 * @param <T> the result type
 */
@FunctionalInterface
public interface SqlFunction<T> {

  /**
   * Runs the work.
   *
   * @param connection the lease's connection; do not keep it beyond this call
   * @return the result
   * @throws SQLException on a database error
   */
  T apply(Connection connection) throws SQLException;
}
