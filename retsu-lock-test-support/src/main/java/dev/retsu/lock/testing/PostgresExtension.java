package dev.retsu.lock.testing;

import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * JUnit 5 extension that gives each test class a fresh database on the JVM's shared PostgreSQL
 * ({@link TestPostgres}). Test methods, constructors and lifecycle methods receive it as a {@link
 * TestDatabase} parameter; it is dropped after the class.
 *
 * <pre>{@code
 * @ExtendWith(PostgresExtension.class)
 * class MyIntegrationTest {
 *   @Test
 *   void works(TestDatabase db) throws Exception { ... }
 * }
 * }</pre>
 */
public final class PostgresExtension implements BeforeAllCallback, ParameterResolver {

  private static final ExtensionContext.Namespace NS =
      ExtensionContext.Namespace.create(PostgresExtension.class);
  private static final AtomicInteger COUNTER = new AtomicInteger();

  /** Creates the extension; JUnit calls this. */
  public PostgresExtension() {}

  @Override
  public void beforeAll(ExtensionContext context) throws Exception {
    Class<?> testClass = context.getRequiredTestClass();
    if (!TestKinds.isIntegration(testClass)) {
      throw new IllegalStateException(
          "A test class that starts PostgreSQL must be named *"
              + TestKinds.INTEGRATION_SUFFIX
              + " so that Failsafe runs it, but was "
              + testClass.getName());
    }
    database(context);
  }

  @Override
  public boolean supportsParameter(ParameterContext parameterContext, ExtensionContext context) {
    return parameterContext.getParameter().getType() == TestDatabase.class;
  }

  @Override
  public Object resolveParameter(ParameterContext parameterContext, ExtensionContext context) {
    try {
      return database(context);
    } catch (Exception e) {
      throw new ParameterResolutionException("cannot create a test database", e);
    }
  }

  private static TestDatabase database(ExtensionContext context) throws Exception {
    ExtensionContext classContext = context;
    while (classContext.getTestMethod().isPresent() && classContext.getParent().isPresent()) {
      classContext = classContext.getParent().get();
    }
    ExtensionContext.Store store = classContext.getStore(NS);
    TestDatabase db = store.get("db", TestDatabase.class);
    if (db == null) {
      String cls = classContext.getRequiredTestClass().getSimpleName().toLowerCase(Locale.ROOT);
      String name =
          "t" + COUNTER.incrementAndGet() + "_" + ProcessHandle.current().pid() + "_" + cls;
      name = name.replaceAll("[^a-z0-9_]", "_");
      if (name.length() > 63) {
        name = name.substring(0, 63);
      }
      // AutoCloseable values in the class-level store are closed after the class.
      db = TestDatabase.create(TestPostgres.shared(), name);
      store.put("db", db);
    }
    return db;
  }
}
