package dev.retsu.lock.oddpool;

import java.io.IOException;
import java.io.InputStream;
import javax.sql.DataSource;

/**
 * Loads {@link OddPoolDataSource} on its own and refuses {@link PoolStats}, so the data source's
 * public methods name a type that is not on its class path. Everything else comes from the parent.
 */
public final class HidingClassLoader extends ClassLoader {

  private static final String ODD = OddPoolDataSource.class.getName();
  private static final String HIDDEN = PoolStats.class.getName();

  private HidingClassLoader(ClassLoader parent) {
    super(parent);
  }

  /**
   * An {@link OddPoolDataSource} over {@code target}, loaded where {@link PoolStats} is missing.
   *
   * @param target where connections come from
   * @return the data source
   * @throws ReflectiveOperationException if it cannot be built
   */
  public static DataSource oddPool(DataSource target) throws ReflectiveOperationException {
    ClassLoader loader = new HidingClassLoader(HidingClassLoader.class.getClassLoader());
    return (DataSource) loader.loadClass(ODD).getConstructor(DataSource.class).newInstance(target);
  }

  @Override
  protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
    // One test thread loads through it: no locking needed.
    if (name.equals(HIDDEN)) {
      throw new ClassNotFoundException(name + " is hidden by this test's class loader");
    }
    if (!name.equals(ODD)) {
      return super.loadClass(name, resolve);
    }
    Class<?> loaded = findLoadedClass(name);
    if (loaded == null) {
      loaded = defineOwn(name);
    }
    if (resolve) {
      resolveClass(loaded);
    }
    return loaded;
  }

  private Class<?> defineOwn(String name) throws ClassNotFoundException {
    String resource = name.replace('.', '/') + ".class";
    try (InputStream in = getParent().getResourceAsStream(resource)) {
      if (in == null) {
        throw new ClassNotFoundException(resource + " not found");
      }
      byte[] bytes = in.readAllBytes();
      return defineClass(name, bytes, 0, bytes.length);
    } catch (IOException e) {
      throw new ClassNotFoundException(name, e);
    }
  }
}
