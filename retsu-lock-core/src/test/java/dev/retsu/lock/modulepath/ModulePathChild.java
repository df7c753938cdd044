package dev.retsu.lock.modulepath;

import dev.retsu.lock.LockKey;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;

/**
 * A JVM with core on the module path, started by {@link ModuleDescriptorTest}. It lives outside
 * core's packages: on the class path next to the named module, a class in {@code dev.retsu.lock}
 * could not load. Prints {@code module=<name>}, {@code api=<key>}, and {@code internal=refused}, or
 * (when started with {@code --add-exports} for the internal package) {@code canProbe=<bool>} and
 * {@code transaction=<state>} for a connection of another driver: answering that links core's code
 * against pgjdbc's types, which fails unless core's module reads pgjdbc's.
 */
public final class ModulePathChild {

  private ModulePathChild() {}

  /**
   * Runs the checks.
   *
   * @param args none
   * @throws ReflectiveOperationException if the internal probe cannot be called for another reason
   */
  public static void main(String[] args) throws ReflectiveOperationException {
    System.out.println("module=" + LockKey.class.getModule().getName());
    System.out.println("api=" + LockKey.of(7L));
    Class<?> pgSession = Class.forName("dev.retsu.lock.internal.session.PgSession");
    try {
      Object canProbe = pgSession.getMethod("canProbe").invoke(null);
      System.out.println("canProbe=" + canProbe);
      Connection otherDriver =
          (Connection)
              Proxy.newProxyInstance(
                  ModulePathChild.class.getClassLoader(),
                  new Class<?>[] {Connection.class},
                  (proxy, method, arguments) -> false); // isWrapperFor: not pgjdbc
      Object transaction =
          pgSession.getMethod("transaction", Connection.class).invoke(null, otherDriver);
      System.out.println("transaction=" + transaction);
    } catch (IllegalAccessException e) {
      System.out.println("internal=refused");
    } catch (InvocationTargetException e) {
      throw new IllegalStateException("PgSession.canProbe() threw", e.getCause());
    }
  }
}
