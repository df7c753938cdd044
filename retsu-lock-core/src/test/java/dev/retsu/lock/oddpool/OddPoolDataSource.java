package dev.retsu.lock.oddpool;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * A pool-like data source with an eviction method, one of whose public methods names a type ({@link
 * PoolStats}) that a test's class loader hides, as when a pool's optional metrics type is missing
 * from the class path. Looking up any of its public methods then fails with {@code
 * NoClassDefFoundError}. Public, so that reflection sees its methods.
 */
public final class OddPoolDataSource implements DataSource {

  private final DataSource target;

  /**
   * Wraps a data source.
   *
   * @param target where connections come from
   */
  public OddPoolDataSource(DataSource target) {
    this.target = target;
  }

  /**
   * An eviction method like HikariCP's; never reached when the lookup fails.
   *
   * @param connection the connection
   */
  public void evictConnection(Connection connection) {
    throw new AssertionError("eviction cannot be found when PoolStats is missing");
  }

  /**
   * Names the hidden type in its signature.
   *
   * @return statistics
   */
  public PoolStats stats() {
    return new PoolStats();
  }

  @Override
  public Connection getConnection() throws SQLException {
    return target.getConnection();
  }

  @Override
  public Connection getConnection(String user, String password) throws SQLException {
    return target.getConnection(user, password);
  }

  @Override
  public PrintWriter getLogWriter() throws SQLException {
    return target.getLogWriter();
  }

  @Override
  public void setLogWriter(PrintWriter out) throws SQLException {
    target.setLogWriter(out);
  }

  @Override
  public void setLoginTimeout(int seconds) throws SQLException {
    target.setLoginTimeout(seconds);
  }

  @Override
  public int getLoginTimeout() throws SQLException {
    return target.getLoginTimeout();
  }

  @Override
  public Logger getParentLogger() throws SQLFeatureNotSupportedException {
    return target.getParentLogger();
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
