package dev.retsu.lock.internal.session;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.locks.ReentrantLock;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Ends the database session behind a connection handle, so that a pool can never hand the session
 * (and any advisory lock it holds) to a later borrower.
 *
 * <p>A plain {@code close()} on a pooled handle returns the live session to the pool, lock and all.
 * This class instead, in order:
 *
 * <ol>
 *   <li>closes (or, when another thread is using it, aborts) the physical pgjdbc connection under
 *       the handle, found through {@link Connection#unwrap}; a closed session ends at once on the
 *       server, which frees the lock before anything else here runs;
 *   <li>tells a pool it knows to evict the connection ({@code evictConnection} on HikariCP, {@code
 *       invalidateConnection} on DBCP2 and pools with the same method);
 *   <li>when no physical connection can be reached, terminates its own backend with {@code
 *       pg_terminate_backend(pg_backend_pid())};
 *   <li>closes the handle, which a pool then discards as broken.
 * </ol>
 *
 * <p>Every step tolerates a connection that is already dead. Stateless and thread-safe.
 */
public final class SessionTerminator {

  private static final Logger LOG = LoggerFactory.getLogger(SessionTerminator.class);
  public static final Executor DIRECT = Runnable::run;
  private static final String[] EVICT_METHODS = {"evictConnection", "invalidateConnection"};

  /**
   * A data source class's public eviction methods, looked up once per class: the reflective lookup
   * loads every type in the class's method signatures, about a millisecond the first time, which a
   * graceful release would otherwise spend between stopping the work and freeing the lock.
   */
  private static final ClassValue<List<Method>> EVICTORS =
      new ClassValue<>() {
        @Override
        protected List<Method> computeValue(Class<?> type) {
          List<Method> found = new ArrayList<>();
          for (String name : EVICT_METHODS) {
            Method m = findMethod(type, name);
            if (m != null) {
              found.add(m);
            }
          }
          return List.copyOf(found);
        }
      };

  private SessionTerminator() {}

  /**
   * Looks up how to evict a session from this data source now, so that ending a session later does
   * no reflection, and warns once about a HikariCP pool whose evictions can starve a waiting thread
   * ({@link PoolRefill}). Idempotent and cheap after the first call per data source class.
   *
   * @param dataSource the data source sessions come from; null does nothing
   */
  public static void prepare(DataSource dataSource) {
    if (dataSource != null) {
      EVICTORS.get(dataSource.getClass());
      PoolRefill.check(dataSource);
    }
  }

  /**
   * Ends the session behind {@code handle}, aborting it when another thread holds {@code io} (that
   * is, is inside a round trip on it right now) and closing it gracefully otherwise.
   *
   * @param dataSource where the handle came from, for pool eviction
   * @param handle the connection handle
   * @param io the lock that serialises round trips on the handle
   * @param context log prefix
   * @return see {@link #endSession(DataSource, Connection, boolean, String)}
   */
  public static boolean endSession(
      DataSource dataSource, Connection handle, ReentrantLock io, String context) {
    boolean idle = io.tryLock();
    try {
      return endSession(dataSource, handle, !idle, context);
    } finally {
      if (idle) {
        io.unlock();
      }
    }
  }

  /**
   * Ends the session behind {@code handle}.
   *
   * @param dataSource where the handle came from, for pool eviction
   * @param handle the connection handle
   * @param busy whether another thread may be inside a call on this connection right now
   * @param context log prefix, e.g. {@code [lock=..., candidate=...]}
   * @return true if the physical session was closed or terminated by a step that confirms it
   */
  public static boolean endSession(
      DataSource dataSource, Connection handle, boolean busy, String context) {
    // The physical session first: it frees the lock at once, before a pool's first eviction in
    // this JVM links its classes (HikariCP: a few milliseconds) while a successor waits.
    boolean ended = closePhysical(handle, busy, context);
    boolean evicted = evictFromPool(dataSource, handle, context);
    if (!ended && !busy) {
      ended = terminateOwnBackend(handle, context);
    }
    if (!ended && !evicted) {
      try {
        handle.abort(DIRECT);
        ended = true;
      } catch (SQLException | RuntimeException e) {
        LOG.warn(
            "{} Could not end the database session: no pool eviction, no pgjdbc connection to"
                + " close and abort failed; the pool may keep it open until it validates it",
            context,
            e);
      }
    }
    if (!ended && !evicted) {
      // Nothing confirmed that the session ended: closing the handle would hand a session that
      // may still hold the lock back to the pool, where the next borrower would inherit it.
      LOG.error(
          "{} Could not confirm that the database session ended; keeping its pool handle open"
              + " rather than returning a session that may hold the lock to the pool ({})",
          context,
          handle.getClass().getName());
      return false;
    }
    try {
      handle.close();
    } catch (SQLException | RuntimeException e) {
      // Expected: the pool's handle notices its physical connection is gone (08003).
      LOG.debug("{} Closing the handle after ending its session: {}", context, e.toString());
    }
    return true;
  }

  private static boolean evictFromPool(DataSource dataSource, Connection handle, String context) {
    if (dataSource == null) {
      return false;
    }
    for (Method method : EVICTORS.get(dataSource.getClass())) {
      String name = method.getName();
      try {
        method.invoke(dataSource, handle);
        LOG.debug("{} {}.{} done", context, dataSource.getClass().getSimpleName(), name);
        return true;
      } catch (IllegalAccessException | InvocationTargetException | RuntimeException e) {
        Throwable cause = e instanceof InvocationTargetException ? e.getCause() : e;
        LOG.debug(
            "{} {}.{} failed, closing the physical connection instead: {}",
            context,
            dataSource.getClass().getSimpleName(),
            name,
            String.valueOf(cause));
      }
    }
    return false;
  }

  private static Method findMethod(Class<?> type, String name) {
    try {
      Method m = type.getMethod(name, Connection.class);
      return java.lang.reflect.Modifier.isPublic(m.getDeclaringClass().getModifiers()) ? m : null;
    } catch (NoSuchMethodException e) {
      return null;
    } catch (LinkageError | SecurityException e) {
      // A public method of the class names a type that is not on the class path: no eviction
      // through it; the session is still ended by closing or aborting it.
      LOG.debug("Cannot look up {}.{}: {}", type.getName(), name, e.toString());
      return null;
    }
  }

  private static boolean closePhysical(Connection handle, boolean busy, String context) {
    Connection physical = physicalConnection(handle);
    if (physical == null) {
      return false;
    }
    try {
      if (busy) {
        physical.abort(DIRECT);
      } else {
        physical.close();
      }
      return true;
    } catch (SQLException | RuntimeException e) {
      LOG.debug("{} Closing the physical connection: {}", context, e.toString());
      try {
        physical.abort(DIRECT);
        return true;
      } catch (SQLException | RuntimeException again) {
        LOG.debug("{} Aborting the physical connection: {}", context, again.toString());
        return false;
      }
    }
  }

  /** The pgjdbc connection under a (possibly pooled) handle, or null if there is none. */
  static Connection physicalConnection(Connection handle) {
    Class<?> pgConnection = pgConnectionClass(handle);
    if (pgConnection == null) {
      return null;
    }
    try {
      if (handle.isWrapperFor(pgConnection)) {
        Object unwrapped = handle.unwrap(pgConnection);
        if (unwrapped instanceof Connection) {
          return (Connection) unwrapped;
        }
      }
    } catch (SQLException | RuntimeException e) {
      LOG.debug("Cannot unwrap {} to the pgjdbc connection: {}", handle.getClass(), e.toString());
    }
    return null;
  }

  private static Class<?> pgConnectionClass(Connection handle) {
    ClassLoader[] loaders = {
      handle.getClass().getClassLoader(),
      Thread.currentThread().getContextClassLoader(),
      SessionTerminator.class.getClassLoader()
    };
    for (ClassLoader loader : loaders) {
      try {
        return Class.forName("org.postgresql.PGConnection", false, loader);
      } catch (ClassNotFoundException | LinkageError e) {
        // try the next loader
      }
    }
    return null;
  }

  private static boolean terminateOwnBackend(Connection handle, String context) {
    try (Statement s = handle.createStatement()) {
      s.execute("SELECT pg_catalog.pg_terminate_backend(pg_catalog.pg_backend_pid())");
      LOG.warn("{} pg_terminate_backend of the own session returned normally", context);
      return false;
    } catch (SQLException e) {
      // 57P01 is the expected answer: the server ended this session.
      if ("57P01".equals(e.getSQLState())) {
        return true;
      }
      LOG.debug("{} Terminating the own backend: {}", context, e.toString());
      return false;
    }
  }
}
