package dev.retsu.lock.quarkus.deployment;

import static org.assertj.core.api.Assertions.assertThat;

import io.quarkus.builder.BuildContext;
import io.quarkus.builder.BuildStep;
import io.quarkus.deployment.builditem.FeatureBuildItem;
import io.quarkus.deployment.builditem.nativeimage.NativeImageProxyDefinitionBuildItem;
import io.quarkus.deployment.builditem.nativeimage.ReflectiveClassBuildItem;
import io.quarkus.deployment.builditem.nativeimage.RuntimeInitializedClassBuildItem;
import io.quarkus.test.QuarkusUnitTest;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * In JVM mode, the build registers for a native image what core needs: a proxy for each JDBC
 * interface core's guarded view wraps (read from core itself, so a new one fails here), the pgjdbc
 * fields core reads, and run-time initialization of core's classes that hold a SecureRandom.
 */
class NativeRegistrationTest {

  // The build step runs where Quarkus builds, the test method inside the application (another
  // class loader, other statics): what the build registered crosses over as system properties.
  private static final String PROXIES = "retsu.quarkus.test.native.proxies";
  private static final String FIELDS = "retsu.quarkus.test.native.fields";
  private static final String LOOKUPS = "retsu.quarkus.test.native.lookups";
  private static final String RUNTIME = "retsu.quarkus.test.native.runtime";

  @RegisterExtension
  static final QuarkusUnitTest APP =
      new QuarkusUnitTest()
          .overrideConfigKey("quarkus.datasource.db-kind", "postgresql")
          .overrideConfigKey("quarkus.datasource.jdbc.url", "jdbc:postgresql://127.0.0.1:1/none")
          .addBuildChainCustomizer(
              chain ->
                  chain
                      .addBuildStep(
                          new BuildStep() {
                            @Override
                            public void execute(BuildContext context) {
                              List<String> proxies = new ArrayList<>();
                              List<String> fields = new ArrayList<>();
                              List<String> lookups = new ArrayList<>();
                              List<String> runtime = new ArrayList<>();
                              for (NativeImageProxyDefinitionBuildItem p :
                                  context.consumeMulti(NativeImageProxyDefinitionBuildItem.class)) {
                                if (p.getClasses().size() == 1) {
                                  proxies.add(p.getClasses().get(0));
                                }
                              }
                              for (ReflectiveClassBuildItem r :
                                  context.consumeMulti(ReflectiveClassBuildItem.class)) {
                                (r.isFields() ? fields : lookups).addAll(r.getClassNames());
                              }
                              for (RuntimeInitializedClassBuildItem r :
                                  context.consumeMulti(RuntimeInitializedClassBuildItem.class)) {
                                runtime.add(r.getClassName());
                              }
                              System.setProperty(PROXIES, String.join(",", proxies));
                              System.setProperty(FIELDS, String.join(",", fields));
                              System.setProperty(LOOKUPS, String.join(",", lookups));
                              System.setProperty(RUNTIME, String.join(",", runtime));
                              context.produce(new FeatureBuildItem("retsu-lock-native-check"));
                            }
                          })
                      .consumes(NativeImageProxyDefinitionBuildItem.class)
                      .consumes(ReflectiveClassBuildItem.class)
                      .consumes(RuntimeInitializedClassBuildItem.class)
                      .produces(FeatureBuildItem.class)
                      .build());

  @Test
  void theBuildRegistersWhatCoreNeedsInANativeImage() throws Exception {
    Set<String> core = new TreeSet<>(List.of("java.sql.Connection"));
    Class<?> guard = Class.forName("dev.retsu.lock.internal.session.SessionGuard");
    Field wrapped = guard.getDeclaredField("WRAPPED");
    wrapped.setAccessible(true);
    for (Object type : (List<?>) wrapped.get(null)) {
      core.add(((Class<?>) type).getName());
    }
    assertThat(registered(PROXIES)).as("proxies of core's guarded view").containsAll(core);
    assertThat(registered(FIELDS))
        .contains("org.postgresql.core.QueryExecutorBase", "org.postgresql.core.PGStream");
    assertThat(registered(LOOKUPS)).contains("org.postgresql.PGConnection");

    List<String> withSecureRandom = new ArrayList<>();
    for (String name : RetsuLockNativeProcessor.RUNTIME_INITIALIZED) {
      withSecureRandom.add(name);
      assertThat(staticSecureRandom(Class.forName(name, false, getClass().getClassLoader())))
          .as("%s holds a static SecureRandom", name)
          .isTrue();
    }
    assertThat(registered(RUNTIME)).containsAll(withSecureRandom);
  }

  private static List<String> registered(String property) {
    String value = System.getProperty(property);
    assertThat(value).as("the build step ran and set %s", property).isNotNull();
    return List.of(value.split(","));
  }

  private static boolean staticSecureRandom(Class<?> type) {
    for (Field f : type.getDeclaredFields()) {
      if (Modifier.isStatic(f.getModifiers()) && f.getType() == SecureRandom.class) {
        return true;
      }
    }
    return false;
  }
}
