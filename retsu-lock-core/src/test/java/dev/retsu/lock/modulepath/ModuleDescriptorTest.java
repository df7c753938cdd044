package dev.retsu.lock.modulepath;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.LeaderLoop;
import java.io.File;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleDescriptor.Exports;
import java.lang.module.ModuleDescriptor.Requires;
import java.lang.module.ModuleFinder;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * Core's public surface as the module system sees it: the built descriptor exports the API package
 * only, and a JVM with core on the module path reaches the API, is refused the internals, and still
 * reads pgjdbc's socket (the reflection into {@code PGStream} works against pgjdbc's automatic
 * module). No database.
 */
class ModuleDescriptorTest {

  private static final Path CORE = location(LeaderLoop.class);

  @Test
  void theDescriptorExportsTheApiPackageOnlyAndKeepsTheInternalsInside() {
    ModuleDescriptor d = ModuleFinder.of(CORE).find("dev.retsu.lock").orElseThrow().descriptor();

    assertThat(d.isOpen()).isFalse();
    assertThat(d.opens()).isEmpty();
    assertThat(d.exports()).extracting(Exports::source).containsExactly("dev.retsu.lock");
    assertThat(d.exports()).noneMatch(Exports::isQualified);
    assertThat(d.packages())
        .contains(
            "dev.retsu.lock.internal",
            "dev.retsu.lock.internal.session",
            "dev.retsu.lock.internal.term",
            "dev.retsu.lock.internal.loop",
            "dev.retsu.lock.internal.group");
    Map<String, Set<Requires.Modifier>> requires =
        d.requires().stream()
            .filter(r -> !r.name().equals("java.base"))
            .collect(Collectors.toMap(Requires::name, Requires::modifiers));
    assertThat(requires)
        .containsOnlyKeys(
            "java.sql", "java.management", "jdk.net", "org.slf4j", "org.postgresql.jdbc")
        .containsEntry("java.sql", Set.of(Requires.Modifier.TRANSITIVE))
        .containsEntry("org.postgresql.jdbc", Set.of(Requires.Modifier.STATIC))
        .containsEntry("org.slf4j", Set.of());
  }

  @Test
  void onTheModulePathTheApiIsReachableTheInternalsAreNotAndTheSocketProbeWorks() throws Exception {
    String pgjdbc = location(org.postgresql.Driver.class).toString();
    assertThat(launch(pgjdbc, ""))
        .containsExactly("module=dev.retsu.lock", "api=0x0000000000000007 (7)", "internal=refused");
    assertThat(launch(pgjdbc, "", EXPORT_INTERNALS))
        .as("pgjdbc resolved as the java.sql.Driver provider; its PGStream field is reachable")
        .containsExactly(
            "module=dev.retsu.lock",
            "api=0x0000000000000007 (7)",
            "canProbe=true",
            "transaction=UNKNOWN");
    assertThat(launch("", pgjdbc, EXPORT_INTERNALS))
        .as("pgjdbc on the class path: core's module asks to read it")
        .containsExactly(
            "module=dev.retsu.lock",
            "api=0x0000000000000007 (7)",
            "canProbe=true",
            "transaction=UNKNOWN");
  }

  private static final String[] EXPORT_INTERNALS = {
    "--add-exports", "dev.retsu.lock/dev.retsu.lock.internal.session=ALL-UNNAMED"
  };

  /** Starts {@link ModulePathChild} with core and SLF4J on the module path, pgjdbc where told. */
  private static List<String> launch(
      String pgjdbcOnModulePath, String pgjdbcOnClassPath, String... options) throws Exception {
    List<String> modulePath =
        new ArrayList<>(List.of(CORE.toString(), location(org.slf4j.Logger.class).toString()));
    List<String> classPath = new ArrayList<>(List.of(location(ModulePathChild.class).toString()));
    if (!pgjdbcOnModulePath.isEmpty()) {
      modulePath.add(pgjdbcOnModulePath);
    }
    if (!pgjdbcOnClassPath.isEmpty()) {
      classPath.add(pgjdbcOnClassPath);
    }
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.add("--module-path");
    command.add(String.join(File.pathSeparator, modulePath));
    command.addAll(List.of("--add-modules", "dev.retsu.lock"));
    command.addAll(List.of(options));
    command.add("-cp");
    command.add(String.join(File.pathSeparator, classPath));
    command.add(ModulePathChild.class.getName());
    Process p = new ProcessBuilder(command).redirectErrorStream(false).start();
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("the child JVM finished").isTrue();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.exitValue()).as("exit status; stderr: %s", err).isZero();
    return out.lines().collect(Collectors.toList());
  }

  private static Path location(Class<?> c) {
    try {
      return Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI());
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }
}
