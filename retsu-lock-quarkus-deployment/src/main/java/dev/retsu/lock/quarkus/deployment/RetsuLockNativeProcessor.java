package dev.retsu.lock.quarkus.deployment;

import io.quarkus.deployment.annotations.BuildProducer;
import io.quarkus.deployment.annotations.BuildStep;
import io.quarkus.deployment.builditem.nativeimage.NativeImageProxyDefinitionBuildItem;
import io.quarkus.deployment.builditem.nativeimage.ReflectiveClassBuildItem;
import io.quarkus.deployment.builditem.nativeimage.RuntimeInitializedClassBuildItem;
import java.util.List;

/**
 * What a native image needs from core: the JDK proxies of the lease's guarded view (one per JDBC
 * interface it wraps), the pgjdbc fields it reads to see a server's message already on the socket,
 * the pgjdbc type it looks up by name, and the classes that hold a {@code SecureRandom}, which must
 * be seeded at run time, not frozen into the image. The lists follow core's sources; a test
 * compares them with core's own lists.
 */
public class RetsuLockNativeProcessor {

  /** The interfaces core's guarded view proxies, each on its own (core's SessionGuard). */
  static final List<String> PROXIED =
      List.of(
          "java.sql.Connection",
          "java.sql.CallableStatement",
          "java.sql.PreparedStatement",
          "java.sql.Statement",
          "java.sql.ResultSet",
          "java.sql.DatabaseMetaData",
          "java.sql.Array",
          "java.sql.NClob",
          "java.sql.Clob",
          "java.sql.Blob",
          "java.sql.SQLXML",
          "java.sql.ResultSetMetaData",
          "java.sql.ParameterMetaData");

  /** The pgjdbc classes whose private fields core reads (core's PgSession). */
  static final List<String> FIELDS_READ =
      List.of("org.postgresql.core.QueryExecutorBase", "org.postgresql.core.PGStream");

  /** The pgjdbc types core finds by name (core's SessionTerminator and PgSession). */
  static final List<String> LOOKED_UP =
      List.of("org.postgresql.PGConnection", "org.postgresql.core.BaseConnection");

  /** Core's classes with a static {@code SecureRandom}. */
  public static final List<String> RUNTIME_INITIALIZED =
      List.of(
          "dev.retsu.lock.internal.session.SessionBorrow",
          "dev.retsu.lock.internal.group.Membership");

  /** Quarkus creates it. */
  public RetsuLockNativeProcessor() {}

  @BuildStep
  void proxies(BuildProducer<NativeImageProxyDefinitionBuildItem> proxies) {
    for (String type : PROXIED) {
      proxies.produce(new NativeImageProxyDefinitionBuildItem(type));
    }
  }

  @BuildStep
  void reflection(BuildProducer<ReflectiveClassBuildItem> reflective) {
    reflective.produce(ReflectiveClassBuildItem.builder(FIELDS_READ).fields().build());
    reflective.produce(ReflectiveClassBuildItem.builder(LOOKED_UP).build());
  }

  @BuildStep
  void runtimeInitialized(BuildProducer<RuntimeInitializedClassBuildItem> classes) {
    for (String type : RUNTIME_INITIALIZED) {
      classes.produce(new RuntimeInitializedClassBuildItem(type));
    }
  }
}
