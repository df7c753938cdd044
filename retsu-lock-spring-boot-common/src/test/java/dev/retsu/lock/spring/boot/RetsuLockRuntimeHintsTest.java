package dev.retsu.lock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.lang.reflect.Field;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.TypeReference;
import org.springframework.aot.hint.predicate.RuntimeHintsPredicates;
import org.springframework.context.annotation.ImportRuntimeHints;

/**
 * The runtime hints cover what core reaches by proxy and by reflection, read from core's own lists
 * and fields where it keeps them, so that a new proxied interface or a new pgjdbc field in core
 * fails here rather than in a native image.
 */
class RetsuLockRuntimeHintsTest {

  private final RuntimeHints hints = hints();

  private static RuntimeHints hints() {
    RuntimeHints hints = new RuntimeHints();
    new RetsuLockRuntimeHints()
        .registerHints(hints, RetsuLockRuntimeHintsTest.class.getClassLoader());
    return hints;
  }

  @Test
  void theAutoConfigurationImportsTheHints() {
    assertThat(RetsuLockAutoConfiguration.class.getAnnotation(ImportRuntimeHints.class).value())
        .containsExactly(RetsuLockRuntimeHints.class);
  }

  @Test
  void everyInterfaceCoresSessionViewProxiesHasAJdkProxyHint() throws Exception {
    List<Class<?>> proxied = new ArrayList<>();
    proxied.add(Connection.class);
    for (Object type :
        (List<?>) staticField("dev.retsu.lock.internal.session.SessionGuard", "WRAPPED")) {
      proxied.add((Class<?>) type);
    }
    assertThat(proxied).hasSizeGreaterThan(5);
    for (Class<?> type : proxied) {
      assertThat(RuntimeHintsPredicates.proxies().forInterfaces(type))
          .as("a JDK proxy of %s", type.getName())
          .accepts(hints);
    }
  }

  @Test
  void thePgjdbcFieldsTheSocketProbeReadsHaveReflectionHints() throws Exception {
    Object internals = staticField("dev.retsu.lock.internal.session.PgSession", "INTERNALS");
    for (String name : List.of("stream", "input")) {
      Field holder = internals.getClass().getDeclaredField(name);
      holder.setAccessible(true);
      Field read = (Field) holder.get(internals);
      assertThat(read).as(name + ": pgjdbc is on the test class path").isNotNull();
      assertThat(RuntimeHintsPredicates.reflection().onField(read))
          .as("%s.%s", read.getDeclaringClass().getName(), read.getName())
          .accepts(hints);
    }
    assertThat(
            RuntimeHintsPredicates.reflection()
                .onType(TypeReference.of("org.postgresql.PGConnection")))
        .accepts(hints);
  }

  @Test
  void hikariEvictionAndThePoolSettingsReadAtStartHaveReflectionHints() throws Exception {
    assertThat(
            RuntimeHintsPredicates.reflection()
                .onMethod(HikariDataSource.class.getMethod("evictConnection", Connection.class))
                .invoke())
        .accepts(hints);
    for (String getter : RetsuLockRuntimeHints.HIKARI_GETTERS) {
      assertThat(
              RuntimeHintsPredicates.reflection()
                  .onMethod(HikariConfig.class.getMethod(getter))
                  .invoke())
          .as(getter)
          .accepts(hints);
    }
    String[] evictors =
        (String[])
            staticField("dev.retsu.lock.internal.session.SessionTerminator", "EVICT_METHODS");
    assertThat(evictors).contains("evictConnection");
  }

  @Test
  void thePropertiesClassesHaveBindingHints() {
    for (Class<?> type :
        List.of(
            RetsuLockProperties.class,
            RetsuLockProperties.Leader.class,
            RetsuLockProperties.Group.class)) {
      assertThat(RuntimeHintsPredicates.reflection().onType(type))
          .as(type.getName())
          .accepts(hints);
    }
  }

  private static Object staticField(String owner, String name) throws Exception {
    Field f = Class.forName(owner).getDeclaredField(name);
    f.setAccessible(true);
    return f.get(null);
  }
}
