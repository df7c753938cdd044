package dev.retsu.lock.spring.boot;

import dev.retsu.lock.LeaderContext;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * A {@link DataSource} view of one leader's lease: {@link #getConnection()} returns the connection
 * of the term bound to the calling thread (inside the leader's task or a {@code @LeaderOnly}
 * method), the session that holds the lock. {@code close()} on it does nothing; it fails with
 * SQLState 08003 once the term is over. Outside a term it fails with 08003 too, so leader work
 * never falls back to another pooled session by accident. Thread-safe.
 */
final class LeaderDataSource implements DataSource {

  private final Object owner;
  private final String what;
  private final String where;
  private final DataSource testModeFallback;

  /**
   * @param owner the leader or group whose bound term it serves
   * @param what for messages: {@code leader 'x'} or {@code group 'g'}
   * @param where for messages: where leader work runs, {@code @LeaderOnly("x")}
   * @param testModeFallback the application's DataSource in a test mode, else null
   */
  LeaderDataSource(Object owner, String what, String where, DataSource testModeFallback) {
    this.owner = owner;
    this.what = what;
    this.where = where;
    this.testModeFallback = testModeFallback;
  }

  @Override
  public Connection getConnection() throws SQLException {
    LeaderContext context = TermBinding.get(owner);
    if (context == null) {
      throw new SQLException(
          "No term of retsu-lock "
              + what
              + " is bound to this thread: use its DataSource inside its LeaderTask or a "
              + where
              + " method, while this instance leads",
          "08003");
    }
    if (context instanceof TestModeContext) {
      if (testModeFallback == null) {
        throw new SQLException(
            "retsu-lock "
                + what
                + " runs in a test mode without a database, and the context has no DataSource",
            "08003");
      }
      return testModeFallback.getConnection(); // test mode: an ordinary pooled connection
    }
    return context.connection();
  }

  @Override
  public Connection getConnection(String username, String password) throws SQLException {
    throw new SQLFeatureNotSupportedException(
        "The lease's connection has the credentials of the lock's DataSource; use getConnection()",
        "0A000");
  }

  @Override
  public PrintWriter getLogWriter() {
    return null;
  }

  @Override
  public void setLogWriter(PrintWriter out) {}

  @Override
  public void setLoginTimeout(int seconds) {}

  @Override
  public int getLoginTimeout() {
    return 0;
  }

  @Override
  public Logger getParentLogger() throws SQLFeatureNotSupportedException {
    throw new SQLFeatureNotSupportedException("java.util.logging is not used");
  }

  @Override
  public <T> T unwrap(Class<T> type) throws SQLException {
    if (type.isInstance(this)) {
      return type.cast(this);
    }
    throw new SQLException(
        "The lease's DataSource view wraps nothing that may be handed out: " + type.getName(),
        "0A000");
  }

  @Override
  public boolean isWrapperFor(Class<?> type) {
    return type.isInstance(this);
  }

  @Override
  public String toString() {
    return "LeaderDataSource{" + what + "}";
  }
}
