package dev.retsu.lock.internal.loop;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The warm-up names some classes by string (types a class literal cannot reach, and classes of
 * optional dependencies) and skips in silence a name that does not load, as it must at run time. A
 * rename would then quietly take that class off the takeover's warm path; here every name has to
 * load, against the versions this module builds with (when a dependency upgrade drops one of its
 * classes, update the list).
 */
class WarmUpTest {

  @Test
  void everyClassTheWarmUpNamesByStringLoads() {
    ClassLoader loader = WarmUp.class.getClassLoader();
    List<String> missing = new ArrayList<>();
    for (String name : WarmUp.OPTIONAL) {
      try {
        Class.forName(name, false, loader);
      } catch (ClassNotFoundException | LinkageError e) {
        missing.add(name);
      }
    }
    assertThat(WarmUp.OPTIONAL).isNotEmpty().doesNotHaveDuplicates();
    assertThat(missing).as("named by the warm-up, but no such class").isEmpty();
  }

  @Test
  void theLibrarysOwnNamesAreTypesAClassLiteralThereCouldNotName() throws ClassNotFoundException {
    for (String name : WarmUp.OPTIONAL) {
      if (name.startsWith("dev.retsu.lock.")) {
        Class<?> type = Class.forName(name, false, WarmUp.class.getClassLoader());
        assertThat(WarmUp.class.getPackage())
            .as("%s is in WarmUp's package: name it by a class literal", name)
            .isNotEqualTo(type.getPackage());
        assertThat(nameableFromAnotherPackage(type))
            .as("%s is public: name it by a class literal, which a rename cannot break", name)
            .isFalse();
      }
    }
  }

  private static boolean nameableFromAnotherPackage(Class<?> type) {
    for (Class<?> c = type; c != null; c = c.getEnclosingClass()) {
      if (!Modifier.isPublic(c.getModifiers())) {
        return false;
      }
    }
    return true;
  }
}
