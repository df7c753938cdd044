package dev.retsu.lock.internal.session;

import java.lang.reflect.InvocationHandler;
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
import java.sql.SQLXML;
import java.sql.Statement;
import java.util.List;
import java.util.Objects;

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
  static final List<Class<?>> WRAPPED =
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
    for (Class<?> type : List.of(GuardHandler.Graph.class, GuardHandler.class)) {
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
    return new GuardHandler.Graph(session, hooks, description).view;
  }
}
