package dev.retsu.lock.internal.session;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Array;
import java.sql.Blob;
import java.sql.CallableStatement;
import java.sql.Clob;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.NClob;
import java.sql.ParameterMetaData;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.SQLXML;
import java.sql.Statement;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * The view of a lease's locked session that leader work gets, and everything reachable from it.
 *
 * <p>A lease must end its session itself: a session that goes back to a pool keeps its advisory
 * lock, and the next borrower holds it too. Guarding only the {@link Connection} is not enough,
 * because JDBC hands the session out again from many places ({@link Statement#getConnection()},
 * {@link ResultSet#getStatement()}, {@link DatabaseMetaData#getConnection()}, {@link
 * Array#getResultSet()}, and {@code unwrap} on any of them). So the guard wraps the whole object
 * graph:
 *
 * <ul>
 *   <li>every {@link Statement}, {@link PreparedStatement}, {@link CallableStatement}, {@link
 *       ResultSet}, {@link DatabaseMetaData}, {@link Array}, {@link Blob}, {@link Clob}, {@link
 *       NClob}, {@link SQLXML}, {@link ResultSetMetaData} and {@link ParameterMetaData} that a call
 *       returns (by declared type or at run time) comes back as a proxy implementing the most
 *       specific of those interfaces; a proxy that reaches its own parent again (as {@code
 *       statement.executeQuery(..).getStatement()} does) gets the existing proxy back;
 *   <li>any {@link Connection} a call returns is replaced by the guarded view, so {@code
 *       getConnection()} anywhere in the graph is the view;
 *   <li>{@code unwrap(iface)} returns the proxy itself when it implements {@code iface}, and is
 *       otherwise refused with SQLState {@code 0A000}; {@code isWrapperFor} agrees. The underlying
 *       objects are never handed out;
 *   <li>on the view, {@code close()} does nothing (the lease owns the session), {@code abort()} is
 *       refused, and {@code isClosed()} is true once the lease is closed;
 *   <li>every other call goes through {@link Hooks}: {@link Hooks#enter()} first (which takes the
 *       session's I/O lock and refuses a closed lease), then the call, then {@link Hooks#exit} in a
 *       {@code finally}. The call's own exception is rethrown unchanged. {@code equals}, {@code
 *       hashCode} and {@code toString} never call the hooks.
 * </ul>
 *
 * <p>Arguments that are proxies of the same graph (an {@code Array} passed to {@code setArray},
 * say) are passed to the driver as the objects they wrap, so the driver sees its own types.
 *
 * <p>Closing a wrapped statement or result set closes the underlying one, through the hooks. Once
 * the lease is closed ({@link Hooks#enter()} fails with 08003) {@code close()} on a wrapped object
 * does nothing, since ending the session closed it already, and {@code isClosed()} answers true;
 * every other call fails with that 08003.
 *
 * <p>Thread-safe as far as the hooks are: the guard itself keeps no mutable state.
 */
public final class SessionGuard {

  /** What the guarded graph reports; implemented by the lease. Implementations are thread-safe. */
  public interface Hooks {

    /**
     * Called before every delegated call. Takes the session's I/O lock, blocking until it is free,
     * and throws SQLException with SQLState 08003 if the lease is closed (releasing the lock
     * first). When it throws, the call does not happen and {@link #exit} is not called.
     *
     * @throws SQLException SQLState 08003 when the lease is closed
     */
    void enter() throws SQLException;

    /**
     * Called after every delegated call that followed a successful {@link #enter()}, also when the
     * call threw; releases the I/O lock. Must not throw.
     *
     * @param startNanos {@link System#nanoTime()} taken right after {@link #enter()} returned
     * @param roundTrip true only when the call was a completed server round trip: a {@code
     *     execute}, {@code executeQuery}, {@code executeUpdate}, {@code executeLargeUpdate}, {@code
     *     executeBatch} or {@code executeLargeBatch} on a statement that returned normally
     * @param failure the SQLException the call threw (unwrapped from its reflective wrapper), or
     *     null when it returned normally or threw something else
     */
    void exit(long startNanos, boolean roundTrip, SQLException failure);

    /**
     * Called with the SQL text of any statement prepared, executed or batched through the graph
     * ({@code Connection.prepareStatement}, {@code prepareCall} and {@code nativeSQL}; {@code
     * Statement.execute*} and {@code addBatch} with a String; and every {@code execute*} or {@code
     * addBatch} of a statement prepared through the graph, with the text it was prepared from),
     * after {@link #enter()} and before the delegated call. Must not throw.
     *
     * @param sql the SQL text as given by the caller
     */
    void sql(String sql);
  }

  /** The interfaces a returned object is wrapped in, most specific first. */
  private static final List<Class<?>> WRAPPED =
      List.of(
          CallableStatement.class,
          PreparedStatement.class,
          Statement.class,
          ResultSet.class,
          DatabaseMetaData.class,
          Array.class,
          NClob.class,
          Clob.class,
          Blob.class,
          SQLXML.class,
          ResultSetMetaData.class,
          ParameterMetaData.class);

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

  private SessionGuard() {}

  /**
   * Generates the proxy classes the guard uses, so the first lease of a standby that takes over
   * does not pay for it. Idempotent and cheap after the first call.
   */
  public static void prepare() {
    InvocationHandler none = (proxy, method, args) -> null;
    ClassLoader loader = SessionGuard.class.getClassLoader();
    Proxy.newProxyInstance(loader, new Class<?>[] {Connection.class}, none);
    for (Class<?> type : WRAPPED) {
      Proxy.newProxyInstance(loader, new Class<?>[] {type}, none);
    }
    // Load the view's own classes too: a lease built at a takeover then links nothing new.
    for (Class<?> type : List.of(Graph.class, Handler.class)) {
      try {
        Class.forName(type.getName(), true, loader);
      } catch (ClassNotFoundException e) {
        throw new IllegalStateException("A class of this library is missing: " + type.getName(), e);
      }
    }
  }

  /**
   * Returns the guarded view of a session.
   *
   * @param session the locked session; never handed out by the view or anything reached from it
   * @param hooks called around every delegated call
   * @param description for toString and error messages, e.g. the lease's context
   * @return the guarded view; {@code getConnection()} anywhere in its graph returns this instance
   */
  public static Connection guard(Connection session, Hooks hooks, String description) {
    Objects.requireNonNull(session, "session");
    Objects.requireNonNull(hooks, "hooks");
    Objects.requireNonNull(description, "description");
    return new Graph(session, hooks, description).view;
  }

  /** What every proxy of one guarded session shares. */
  private static final class Graph {
    final Hooks hooks;
    final String description;
    final Connection view;

    Graph(Connection session, Hooks hooks, String description) {
      this.hooks = hooks;
      this.description = description;
      this.view = (Connection) new Handler(this, Connection.class, session, null).proxy;
    }
  }

  private static final class Handler implements InvocationHandler {
    private final Graph graph;
    private final Class<?> type;
    private final Object target;
    private final Handler parent;
    final Object proxy;

    /** The text a prepared or callable statement was built from: each execution runs it again. */
    private volatile String preparedSql;

    Handler(Graph graph, Class<?> type, Object target, Handler parent) {
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

    /** {@link Hooks#enter()}; false instead of its 08003 when the lease is closed. */
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

    /** Runs the call after a successful {@link Hooks#enter()}; always ends with exit. */
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
          Handler h = handlerOf(wrapped);
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
        Handler h = handlerOf(args[i]);
        if (h != null && h.graph == graph) {
          if (out == args) {
            out = args.clone();
          }
          out[i] = h.target;
        }
      }
      return out;
    }

    private static Handler handlerOf(Object o) {
      if (o != null && Proxy.isProxyClass(o.getClass())) {
        InvocationHandler h = Proxy.getInvocationHandler(o);
        if (h instanceof Handler) {
          return (Handler) h;
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
      for (Handler h = this; h != null; h = h.parent) {
        if (h.target == result) {
          return h.proxy;
        }
      }
      return new Handler(graph, as, result, this).proxy;
    }

    private static Class<?> wrappedType(Object o) {
      for (Class<?> type : WRAPPED) {
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
}
