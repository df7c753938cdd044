package dev.retsu.lock.internal.session;

import java.lang.reflect.Method;
import java.util.Collections;
import java.util.Set;
import java.util.WeakHashMap;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Warns, once per pool, about a HikariCP pool that keeps fewer idle connections than its maximum
 * ({@code minimumIdle < maximumPoolSize}).
 *
 * <p>Ending a lock's session evicts its connection from the pool ({@link SessionTerminator}).
 * HikariCP replaces an evicted connection only up to {@code minimumIdle}, and starts a new
 * connection for a waiting thread only when that thread begins to wait. A thread that begins to
 * wait while the pool is at its maximum, and whose connections then end by eviction rather than by
 * return, is not served: it waits its whole {@code connectionTimeout} and fails with "Connection is
 * not available" although the pool has room again (a known HikariCP limitation, still open). A
 * fixed-size pool, HikariCP's default, refills at every eviction. Each pool is read once (weakly
 * held); thread-safe.
 */
final class PoolRefill {

  private static final Logger LOG = LoggerFactory.getLogger(PoolRefill.class);
  private static final String HIKARI_CONFIG = "com.zaxxer.hikari.HikariConfig";
  private static final Set<DataSource> CHECKED =
      Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));

  private PoolRefill() {}

  /** Logs the warning if {@code dataSource} is a HikariCP pool that can starve a waiting thread. */
  static void check(DataSource dataSource) {
    if (!isHikari(dataSource.getClass()) || !CHECKED.add(dataSource)) {
      return;
    }
    Object minimumIdle = get(dataSource, "getMinimumIdle");
    Object maximum = get(dataSource, "getMaximumPoolSize");
    if (!(minimumIdle instanceof Integer) || !(maximum instanceof Integer)) {
      return;
    }
    int min = (Integer) minimumIdle;
    int max = (Integer) maximum;
    // a negative minimumIdle is HikariCP's "unset": the pool takes the maximum when it starts
    if (min < 0 || min >= max) {
      return;
    }
    LOG.warn(
        "HikariCP pool {} keeps minimumIdle={} below maximumPoolSize={}: retsu-lock ends a lock's"
            + " session by evicting its connection, and HikariCP replaces an evicted connection only"
            + " up to minimumIdle, so a thread that starts waiting for a connection while the pool"
            + " is full can wait connectionTimeout ({} ms) and fail although the pool has room"
            + " again (HikariCP issue 906). Leave minimumIdle unset or set it to maximumPoolSize (a"
            + " fixed-size pool, HikariCP's default)",
        name(dataSource),
        min,
        max,
        get(dataSource, "getConnectionTimeout"));
  }

  /**
   * The pool's name; a pool that has not started yet has none unless it was given one (HikariCP
   * names it {@code HikariPool-<n>} when it starts; Spring Boot sets none by default), so then its
   * URL without the query, which may carry a password, and where to set a name.
   */
  static String name(DataSource dataSource) {
    Object name = get(dataSource, "getPoolName");
    if (name != null) {
      return String.valueOf(name);
    }
    Object url = get(dataSource, "getJdbcUrl");
    String where = url == null ? "" : String.valueOf(url);
    int query = where.indexOf('?');
    where = query < 0 ? where : where.substring(0, query);
    return "(not named yet; set poolName, or spring.datasource.hikari.pool-name under Spring Boot)"
        + (where.isEmpty() ? "" : " of " + where);
  }

  private static boolean isHikari(Class<?> type) {
    for (Class<?> c = type; c != null; c = c.getSuperclass()) {
      if (c.getName().equals(HIKARI_CONFIG)) {
        return true;
      }
    }
    return false;
  }

  private static Object get(DataSource dataSource, String getter) {
    try {
      Method m = dataSource.getClass().getMethod(getter);
      return m.invoke(dataSource);
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      LOG.debug("Cannot read {} of {}: {}", getter, dataSource.getClass().getName(), e.toString());
      return null;
    }
  }
}
