package dev.retsu.lock.fakes;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;

/**
 * A real data source that refuses every connection with the SQLState pgjdbc gives for a server that
 * is not up (08001) until {@link #open()} is called, as a database started after the application
 * looks. Public, so tests in other packages can use it.
 */
public final class DownUntilOpened extends DelegatingDataSource {

  private final AtomicBoolean up = new AtomicBoolean();
  private final AtomicInteger refused = new AtomicInteger();

  /**
   * Wraps a data source that is down until opened.
   *
   * @param target the real data source
   */
  public DownUntilOpened(DataSource target) {
    super(target);
  }

  /** The database "comes up": connections are passed through from now on. */
  public void open() {
    up.set(true);
  }

  /**
   * How many connections were refused so far.
   *
   * @return the count
   */
  public int refused() {
    return refused.get();
  }

  @Override
  public Connection getConnection() throws SQLException {
    if (!up.get()) {
      refused.incrementAndGet();
      throw new SQLException(
          "Connection to 127.0.0.1:5432 refused (the test's database is down)", "08001");
    }
    return super.getConnection();
  }
}
