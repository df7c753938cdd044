package dev.retsu.lock.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/**
 * The tests run on the pgjdbc the build says (retsu.tests.pgjdbc): the managed version, or under
 * {@code -Ppgjdbc-oldest} the oldest one docs/COMPATIBILITY.md claims, in place of the other.
 */
class PgjdbcOnTheClassPathTest {

  @Test
  void pgjdbcOnTheTestClassPathIsTheOneTheBuildAskedFor() throws Exception {
    String wanted = System.getProperty("retsu.tests.pgjdbc");
    assertThat(wanted).as("retsu.tests.pgjdbc, set by the parent pom").isNotBlank();
    assertThat(
            Path.of(
                    org.postgresql.Driver.class
                        .getProtectionDomain()
                        .getCodeSource()
                        .getLocation()
                        .toURI())
                .getFileName()
                .toString())
        .as("the jar pgjdbc's driver class is loaded from")
        .isEqualTo("postgresql-" + wanted + ".jar");
    assertThat(
            Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
                .map(e -> Path.of(e).getFileName().toString())
                .filter(n -> n.startsWith("postgresql-") && n.endsWith(".jar")))
        .as("pgjdbc jars on the class path")
        .containsExactly("postgresql-" + wanted + ".jar");
  }
}
