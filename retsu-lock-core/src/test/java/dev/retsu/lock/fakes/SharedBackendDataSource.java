package dev.retsu.lock.fakes;

import dev.retsu.lock.testing.TestDatabase;
import java.io.PrintWriter;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * Hands every borrower the same backend, as a transaction-mode pooler with one server connection
 * does: {@code close()} of a borrowed handle keeps the backend (and any session lock on it) open.
 */
public final class SharedBackendDataSource implements DataSource, AutoCloseable {

  private final Connection backend;

  public SharedBackendDataSource(TestDatabase db) throws SQLException {
    this(db.connect());
  }

  /** Hands out {@code backend}; {@link #close()} closes it. */
  public SharedBackendDataSource(Connection backend) {
    this.backend = backend;
  }

  @Override
  public Connection getConnection() {
    return (Connection)
        Proxy.newProxyInstance(
            getClass().getClassLoader(),
            new Class<?>[] {Connection.class},
            (proxy, method, args) -> {
              switch (method.getName()) {
                case "close":
                case "abort":
                  return null;
                case "unwrap":
                case "isWrapperFor":
                  // Like a pooler's handle, it does not hand out the server connection.
                  if (method.getName().equals("isWrapperFor")) {
                    return false;
                  }
                  throw new SQLException("not a wrapper");
                case "equals":
                  return proxy == args[0];
                case "hashCode":
                  return System.identityHashCode(proxy);
                default:
                  try {
                    return method.invoke(backend, args);
                  } catch (java.lang.reflect.InvocationTargetException e) {
                    throw e.getCause();
                  }
              }
            });
  }

  @Override
  public Connection getConnection(String user, String password) {
    return getConnection();
  }

  @Override
  public void close() throws SQLException {
    backend.close();
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
    throw new SQLFeatureNotSupportedException();
  }

  @Override
  public <T> T unwrap(Class<T> iface) throws SQLException {
    throw new SQLException("not a wrapper");
  }

  @Override
  public boolean isWrapperFor(Class<?> iface) {
    return false;
  }
}
