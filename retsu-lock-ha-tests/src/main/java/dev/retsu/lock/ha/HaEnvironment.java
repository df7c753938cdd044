package dev.retsu.lock.ha;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * What the HA cluster needs from the machine, and getting it: Debian's {@code patroni} (3.0),
 * {@code etcd-server} (3.4), {@code haproxy} (2.6), {@code postgresql-15} and {@code nftables}.
 * When one is missing and this JVM runs as root with {@code apt-get}, {@link #prepare()} installs
 * them and stops the services Debian may start on install (the cluster runs its own, on private
 * ports); otherwise it says what is missing, for the tests to skip with that message.
 */
public final class HaEnvironment {

  /** PostgreSQL 15's binaries, where Debian puts them. */
  public static final Path PG_BIN = Path.of("/usr/lib/postgresql/15/bin");

  /** Each executable the cluster runs, and the Debian package that brings it. */
  static final Map<Path, String> NEEDED = new LinkedHashMap<>();

  static {
    NEEDED.put(Path.of("/usr/bin/patroni"), "patroni");
    NEEDED.put(Path.of("/usr/bin/patronictl"), "patroni");
    NEEDED.put(Path.of("/usr/bin/etcd"), "etcd-server");
    NEEDED.put(Path.of("/usr/sbin/haproxy"), "haproxy");
    NEEDED.put(PG_BIN.resolve("postgres"), "postgresql-15");
    NEEDED.put(Path.of("/usr/sbin/nft"), "nftables");
    NEEDED.put(Path.of("/usr/bin/setpriv"), "util-linux");
  }

  /** The service a package's install may start, stopped right after we installed that package. */
  private static final Map<String, String> SERVICES =
      Map.of(
          "etcd-server",
          "etcd",
          "haproxy",
          "haproxy",
          "patroni",
          "patroni",
          "postgresql-15",
          "postgresql");

  private HaEnvironment() {}

  /**
   * The packages whose executables are missing.
   *
   * @return package names, without duplicates, in a stable order
   */
  public static List<String> missingPackages() {
    List<String> missing = new ArrayList<>();
    NEEDED.forEach(
        (path, pkg) -> {
          if (!Files.isExecutable(path) && !missing.contains(pkg)) {
            missing.add(pkg);
          }
        });
    return missing;
  }

  /**
   * Makes the machine ready, installing what is missing when root.
   *
   * @return empty when ready, else why the HA tests cannot run here (for a skip message)
   */
  public static Optional<String> prepare() {
    if (!System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).contains("linux")) {
      return Optional.of("the HA cluster needs Linux with Debian's packages");
    }
    List<String> missing = missingPackages();
    if (missing.isEmpty()) {
      return Optional.empty();
    }
    String install = "apt-get install -y --no-install-recommends " + String.join(" ", missing);
    if (!"root".equals(System.getProperty("user.name")) || !Files.isExecutable(apt())) {
      return Optional.of(
          "missing "
              + missing
              + "; not root with apt-get, so nothing was installed. As root: "
              + install
              + " (Debian 12: patroni 3.0, etcd-server 3.4, haproxy 2.6, postgresql-15)");
    }
    run(List.of(apt().toString(), "update", "-qq"), 600);
    List<String> cmd =
        new ArrayList<>(
            List.of(apt().toString(), "install", "-y", "-qq", "--no-install-recommends"));
    cmd.addAll(missing);
    Result r = run(cmd, 900);
    if (r.status != 0) {
      return Optional.of("apt-get install " + missing + " failed (" + r.status + "): " + r.output);
    }
    for (String pkg : missing) {
      // Debian may start a service on install (not where policy-rc.d forbids it): the cluster
      // runs its own processes on private ports, so stop only what this install brought in.
      String service = SERVICES.get(pkg);
      if (service != null) {
        run(List.of("service", service, "stop"), 60);
      }
    }
    List<String> still = missingPackages();
    return still.isEmpty()
        ? Optional.empty()
        : Optional.of("still missing after apt-get install: " + still);
  }

  private static Path apt() {
    return Path.of("/usr/bin/apt-get");
  }

  /** What a command printed and its exit status. */
  record Result(int status, String output) {}

  static Result run(List<String> command, int timeoutSeconds) {
    ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
    pb.environment().put("DEBIAN_FRONTEND", "noninteractive");
    try {
      Process p = pb.start();
      p.getOutputStream().close();
      byte[] out = p.getInputStream().readAllBytes();
      if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return new Result(-1, "timed out after " + timeoutSeconds + " s: " + command);
      }
      String text = new String(out, StandardCharsets.UTF_8);
      return new Result(p.exitValue(), text.length() > 4000 ? text.substring(0, 4000) : text);
    } catch (IOException e) {
      return new Result(-1, "cannot run " + command + ": " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new Result(-1, "interrupted running " + command);
    }
  }
}
