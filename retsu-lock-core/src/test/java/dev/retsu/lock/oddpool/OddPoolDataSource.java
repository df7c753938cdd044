package dev.retsu.lock.oddpool;

import dev.retsu.lock.fakes.DelegatingDataSource;
import java.sql.Connection;
import javax.sql.DataSource;

/**
 * A pool-like data source with an eviction method, one of whose public methods names a type ({@link
 * PoolStats}) that a test's class loader hides, as when a pool's optional metrics type is missing
 * from the class path. Looking up any of its public methods then fails with {@code
 * NoClassDefFoundError}. Public, so that reflection sees its methods.
 */
public final class OddPoolDataSource extends DelegatingDataSource {

  /**
   * Wraps a data source.
   *
   * @param target where connections come from
   */
  public OddPoolDataSource(DataSource target) {
    super(target);
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
}
