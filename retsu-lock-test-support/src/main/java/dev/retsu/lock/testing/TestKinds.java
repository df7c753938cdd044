package dev.retsu.lock.testing;

import java.util.Optional;
import org.junit.platform.engine.FilterResult;
import org.junit.platform.engine.TestDescriptor;
import org.junit.platform.engine.TestSource;
import org.junit.platform.engine.support.descriptor.ClassSource;
import org.junit.platform.engine.support.descriptor.MethodSource;
import org.junit.platform.launcher.PostDiscoveryFilter;

/**
 * The split between unit and integration tests, by name: a test class that starts PostgreSQL ends
 * with {@code IntegrationTest} and runs under Failsafe; every other test class ends with {@code
 * Test} and runs under Surefire. The build's include patterns make that split for a plain {@code
 * verify}, but a {@code -Dtest=...} or {@code -Dit.test=...} pattern replaces them (an exclusion
 * such as {@code -Dtest='!FaultInjectionIntegrationTest'} would make Surefire run every integration
 * test too). This filter keeps the split whatever the patterns: each plugin names its side in the
 * system property {@value #PROPERTY} ({@code unit} or {@code integration}), and the test classes of
 * the other side are left out of the run. Without the property (an IDE) nothing is left out.
 * Registered with the JUnit Platform through {@code META-INF/services}. Thread-safe (stateless).
 */
public final class TestKinds implements PostDiscoveryFilter {

  /** The system property that names the side this JVM runs: {@code unit} or {@code integration}. */
  public static final String PROPERTY = "retsu.tests.kind";

  /** The suffix of every integration test class. */
  public static final String INTEGRATION_SUFFIX = "IntegrationTest";

  /** Creates the filter; the JUnit Platform calls this. */
  public TestKinds() {}

  /**
   * Whether a top-level test class is an integration test, by its name.
   *
   * @param testClass the test class
   * @return true if its top-level class name ends with {@value #INTEGRATION_SUFFIX}
   */
  public static boolean isIntegration(Class<?> testClass) {
    Class<?> top = testClass;
    while (top.getEnclosingClass() != null) {
      top = top.getEnclosingClass();
    }
    return top.getSimpleName().endsWith(INTEGRATION_SUFFIX);
  }

  @Override
  public FilterResult apply(TestDescriptor descriptor) {
    String kind = System.getProperty(PROPERTY);
    Optional<String> className = descriptor.getSource().flatMap(TestKinds::className);
    if (kind == null || className.isEmpty()) {
      return FilterResult.included("no split requested");
    }
    String top = className.get();
    int nested = top.indexOf('$');
    if (nested >= 0) {
      top = top.substring(0, nested);
    }
    boolean integration = top.endsWith(INTEGRATION_SUFFIX);
    switch (kind) {
      case "unit":
        return FilterResult.includedIf(
            !integration, () -> "a unit test", () -> "runs under Failsafe");
      case "integration":
        return FilterResult.includedIf(
            integration, () -> "an integration test", () -> "runs under Surefire");
      default:
        throw new IllegalStateException(
            PROPERTY + " must be unit or integration, but was \"" + kind + "\"");
    }
  }

  private static Optional<String> className(TestSource source) {
    if (source instanceof ClassSource) {
      return Optional.of(((ClassSource) source).getClassName());
    }
    if (source instanceof MethodSource) {
      return Optional.of(((MethodSource) source).getClassName());
    }
    return Optional.empty();
  }
}
