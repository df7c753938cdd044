package dev.retsu.lock.spring.boot;

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
import java.sql.SQLXML;
import java.sql.Statement;
import java.util.List;
import org.springframework.aot.hint.ExecutableMode;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.aot.hint.TypeReference;
import org.springframework.boot.context.properties.bind.BindableRuntimeHintsRegistrar;
import org.springframework.lang.Nullable;

/**
 * What retsu-lock reaches at run time by reflection or by proxy, for ahead-of-time processing and a
 * native image: registered through {@code @ImportRuntimeHints} on {@link
 * RetsuLockAutoConfiguration}.
 *
 * <ul>
 *   <li>the JDK proxies of the lease's session view: a {@link Connection}, and every JDBC object
 *       reachable from it (statements, result sets, metadata, LOBs), each wrapped in a proxy of its
 *       interface so that none can hand the locked session to a pool;
 *   <li>pgjdbc's internals the socket probe reads ({@code QueryExecutorBase.pgStream}, {@code
 *       PGStream.pgInput}) and the driver types core loads by name;
 *   <li>HikariCP's eviction method and the pool settings checked at start, called by reflection so
 *       that core does not depend on HikariCP;
 *   <li>the {@code retsu.lock.*} properties classes, for binding.
 * </ul>
 *
 * A type that is not on the class path (no HikariCP, no pgjdbc) gets no hint. Thread-safe.
 */
public final class RetsuLockRuntimeHints implements RuntimeHintsRegistrar {

  /** The interfaces of the JDK proxies that core's session view creates. */
  static final List<Class<?>> PROXIED =
      List.of(
          Connection.class,
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

  /** The pool settings core reads from a HikariCP pool at start. */
  static final List<String> HIKARI_GETTERS =
      List.of("getMinimumIdle", "getMaximumPoolSize", "getPoolName", "getConnectionTimeout");

  /** Creates the registrar. */
  public RetsuLockRuntimeHints() {}

  @Override
  public void registerHints(RuntimeHints hints, @Nullable ClassLoader classLoader) {
    for (Class<?> type : PROXIED) {
      hints.proxies().registerJdkProxy(type);
    }
    hints
        .reflection()
        .registerTypeIfPresent(
            classLoader, "org.postgresql.core.QueryExecutorBase", t -> t.withField("pgStream"))
        .registerTypeIfPresent(
            classLoader, "org.postgresql.core.PGStream", t -> t.withField("pgInput"))
        .registerTypeIfPresent(classLoader, "org.postgresql.PGConnection", t -> {})
        .registerTypeIfPresent(classLoader, "org.postgresql.core.BaseConnection", t -> {})
        .registerTypeIfPresent(
            classLoader,
            "com.zaxxer.hikari.HikariDataSource",
            t ->
                t.withMethod(
                    "evictConnection",
                    List.of(TypeReference.of(Connection.class)),
                    ExecutableMode.INVOKE))
        .registerTypeIfPresent(
            classLoader,
            "com.zaxxer.hikari.HikariConfig",
            t -> {
              for (String getter : HIKARI_GETTERS) {
                t.withMethod(getter, List.of(), ExecutableMode.INVOKE);
              }
            });
    BindableRuntimeHintsRegistrar.forTypes(RetsuLockProperties.class)
        .registerHints(hints, classLoader);
  }
}
