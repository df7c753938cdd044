package dev.retsu.lock.internal;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.function.BooleanSupplier;

/**
 * The view of a lease's connection that leader work gets. It forwards every call to the lease's own
 * session, except that:
 *
 * <ul>
 *   <li>{@code close()} does nothing: the lease owns the session and ends it when the lease closes
 *       (so try-with-resources on the view is harmless and can never return the session, with its
 *       lock, to a pool);
 *   <li>{@code abort()} is refused: close the lease instead;
 *   <li>once the lease is closed, every call fails with SQLState 08003, so work that outlives its
 *       term cannot run.
 * </ul>
 */
public final class LeaseConnections {

  private LeaseConnections() {}

  /**
   * Wraps a lease's connection.
   *
   * @param session the lease's connection
   * @param open whether the lease is still open
   * @param description for error messages, e.g. the lease's context
   * @return the guarded view
   */
  public static Connection guard(Connection session, BooleanSupplier open, String description) {
    return (Connection)
        Proxy.newProxyInstance(
            LeaseConnections.class.getClassLoader(),
            new Class<?>[] {Connection.class},
            new Handler(session, open, description));
  }

  private static final class Handler implements InvocationHandler {
    private final Connection session;
    private final BooleanSupplier open;
    private final String description;

    Handler(Connection session, BooleanSupplier open, String description) {
      this.session = session;
      this.open = open;
      this.description = description;
    }

    @Override
    public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
      switch (method.getName()) {
        case "equals":
          return proxy == args[0];
        case "hashCode":
          return System.identityHashCode(proxy);
        case "toString":
          return "lease connection " + description + (open.getAsBoolean() ? "" : " (closed)");
        case "close":
          return null;
        case "isClosed":
          return !open.getAsBoolean() || session.isClosed();
        case "abort":
          throw new SQLFeatureNotSupportedException(
              "abort() on a lease's connection is not allowed; close the lease instead "
                  + description);
        default:
          break;
      }
      if (!open.getAsBoolean()) {
        throw new SQLException(
            "The lease is closed; its connection can no longer be used " + description, "08003");
      }
      try {
        return method.invoke(session, args);
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
    }
  }
}
