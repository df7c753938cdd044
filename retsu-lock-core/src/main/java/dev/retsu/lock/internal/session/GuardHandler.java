package dev.retsu.lock.internal.session;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.util.Set;

/**
 * The invocation handler behind every proxy of one guarded session ({@link SessionGuard}): what a
 * call is allowed to do, which SQL text it reports to the hooks, and what the caller gets back
 * instead of the driver's object. Thread-safe: its only mutable field is the text a statement was
 * prepared from, written once.
 */
final class GuardHandler implements InvocationHandler {

  /** Statement methods that are a server round trip when they return normally. */
  private static final Set<String> ROUND_TRIPS =
      Set.of(
          "execute",
          "executeQuery",
          "executeUpdate",
          "executeLargeUpdate",
          "executeBatch",
          "executeLargeBatch");

  /** Connection methods whose first argument is SQL text. */
  private static final Set<String> CONNECTION_SQL =
      Set.of("prepareStatement", "prepareCall", "nativeSQL");

  /** What every proxy of one guarded session shares. */
  static final class Graph {
    final SessionGuard.Hooks hooks;
    final String description;
    final Connection view;

    Graph(Connection session, SessionGuard.Hooks hooks, String description) {
      this.hooks = hooks;
      this.description = description;
      this.view = (Connection) new GuardHandler(this, Connection.class, session, null).proxy;
    }
  }

  private final Graph graph;
  private final Class<?> type;
  private final Object target;
  private final GuardHandler parent;
  final Object proxy;

  /** The text a prepared or callable statement was built from: each execution runs it again. */
  private volatile String preparedSql;

  GuardHandler(Graph graph, Class<?> type, Object target, GuardHandler parent) {
    this.graph = graph;
    this.type = type;
    this.target = target;
    this.parent = parent;
    this.proxy =
        Proxy.newProxyInstance(SessionGuard.class.getClassLoader(), new Class<?>[] {type}, this);
  }

  private boolean isView() {
    return type == Connection.class;
  }

  @Override
  public Object invoke(Object self, Method method, Object[] args) throws Throwable {
    String name = method.getName();
    if (method.getDeclaringClass() == Object.class) {
      switch (name) {
        case "equals":
          return self == args[0];
        case "hashCode":
          return System.identityHashCode(self);
        default:
          return toString();
      }
    }
    switch (name) {
      case "unwrap":
        return unwrap((Class<?>) args[0]);
      case "isWrapperFor":
        return args[0] != null && ((Class<?>) args[0]).isInstance(proxy);
      case "close":
        if (isView()) {
          return null; // the lease owns the session and ends it
        }
        return closeUnlessLeaseClosed(method);
      case "abort":
        if (isView()) {
          throw new SQLFeatureNotSupportedException(
              "abort() on a lease's connection is not allowed; close the lease instead "
                  + graph.description);
        }
        break;
      case "isClosed":
        return isClosed(method);
      default:
        break;
    }
    return delegate(method, args);
  }

  /** Answers true instead of failing when the lease is closed. */
  private Object isClosed(Method method) throws Throwable {
    return enterUnlessLeaseClosed() ? call(method, null, System.nanoTime()) : Boolean.TRUE;
  }

  /**
   * Closes a wrapped object; does nothing once the lease is closed, because ending the session
   * closed it already (and closing twice is a no-op in JDBC).
   */
  private Object closeUnlessLeaseClosed(Method method) throws Throwable {
    return enterUnlessLeaseClosed() ? call(method, null, System.nanoTime()) : null;
  }

  /** {@link SessionGuard.Hooks#enter()}; false instead of its 08003 when the lease is closed. */
  private boolean enterUnlessLeaseClosed() throws SQLException {
    try {
      graph.hooks.enter();
      return true;
    } catch (SQLException e) {
      if ("08003".equals(e.getSQLState())) {
        return false;
      }
      throw e;
    }
  }

  private Object delegate(Method method, Object[] args) throws Throwable {
    graph.hooks.enter();
    return call(method, args, System.nanoTime());
  }

  /** Runs the call after a successful {@link SessionGuard.Hooks#enter()}; always ends with exit. */
  private Object call(Method method, Object[] args, long start) throws Throwable {
    boolean roundTrip = false;
    SQLException failure = null;
    try {
      String sql = sqlOf(method, args);
      if (sql != null) {
        graph.hooks.sql(sql);
      }
      Object result;
      try {
        result = method.invoke(target, unwrapArguments(args));
      } catch (InvocationTargetException e) {
        Throwable cause = e.getCause();
        if (cause instanceof SQLException) {
          failure = (SQLException) cause;
        }
        throw cause;
      }
      roundTrip = isStatement() && ROUND_TRIPS.contains(method.getName());
      Object wrapped = wrap(result);
      if (sql != null && isView() && !method.getName().equals("nativeSQL")) {
        GuardHandler h = handlerOf(wrapped);
        if (h != null) {
          h.preparedSql = sql; // prepareStatement / prepareCall: suspect at every execution
        }
      }
      return wrapped;
    } finally {
      graph.hooks.exit(start, roundTrip, failure);
    }
  }

  private boolean isStatement() {
    return Statement.class.isAssignableFrom(type);
  }

  /**
   * The SQL text a call prepares, executes or batches, or null. An execution of a prepared or
   * callable statement runs the text it was prepared from, so that text is reported again: a
   * statement prepared in one refresh and executed in a later one stays as suspect as its text.
   */
  private String sqlOf(Method method, Object[] args) {
    if (args == null || args.length == 0 || !(args[0] instanceof String)) {
      String prepared = preparedSql;
      return prepared != null && isStatementSql(method.getName()) ? prepared : null;
    }
    String name = method.getName();
    if (isView() ? CONNECTION_SQL.contains(name) : isStatement() && isStatementSql(name)) {
      return (String) args[0];
    }
    return null;
  }

  private static boolean isStatementSql(String name) {
    return name.startsWith("execute") || name.equals("addBatch");
  }

  /** Replaces proxies of this graph among the arguments by the objects they wrap. */
  private Object[] unwrapArguments(Object[] args) {
    if (args == null) {
      return null;
    }
    Object[] out = args;
    for (int i = 0; i < args.length; i++) {
      GuardHandler h = handlerOf(args[i]);
      if (h != null && h.graph == graph) {
        if (out == args) {
          out = args.clone();
        }
        out[i] = h.target;
      }
    }
    return out;
  }

  private static GuardHandler handlerOf(Object o) {
    if (o != null && Proxy.isProxyClass(o.getClass())) {
      InvocationHandler h = Proxy.getInvocationHandler(o);
      if (h instanceof GuardHandler) {
        return (GuardHandler) h;
      }
    }
    return null;
  }

  /** What the caller gets instead of {@code result}: the view, a proxy, or the value itself. */
  private Object wrap(Object result) {
    if (result == null) {
      return null;
    }
    if (result instanceof Connection) {
      return graph.view;
    }
    Class<?> as = wrappedType(result);
    if (as == null) {
      return result;
    }
    for (GuardHandler h = this; h != null; h = h.parent) {
      if (h.target == result) {
        return h.proxy;
      }
    }
    return new GuardHandler(graph, as, result, this).proxy;
  }

  private static Class<?> wrappedType(Object o) {
    for (Class<?> type : SessionGuard.WRAPPED) {
      if (type.isInstance(o)) {
        return type;
      }
    }
    return null;
  }

  private Object unwrap(Class<?> iface) throws SQLException {
    if (iface != null && iface.isInstance(proxy)) {
      return proxy;
    }
    throw new SQLException(
        "unwrap("
            + (iface == null ? "null" : iface.getName())
            + ") on the lease's "
            + type.getSimpleName()
            + " is refused: it would hand out the lease's locked session; a pool would take it"
            + " back, or close would end it, while the lease still holds the lock. Only the"
            + " JDBC interface "
            + type.getName()
            + " is available "
            + graph.description,
        "0A000");
  }

  @Override
  public String toString() {
    return (isView() ? "lease connection" : "lease " + type.getSimpleName())
        + "@"
        + Integer.toHexString(System.identityHashCode(proxy))
        + " "
        + graph.description;
  }
}
