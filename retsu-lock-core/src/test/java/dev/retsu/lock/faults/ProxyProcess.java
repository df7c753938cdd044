package dev.retsu.lock.faults;

import static org.awaitility.Awaitility.await;

import dev.retsu.lock.testing.TestDatabase;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A real proxy process between the tests and their PostgreSQL, on 127.0.0.1: Debian's PgBouncer (in
 * the pool mode the test asks for) or HAProxy in TCP mode. Its configuration and logs live in a
 * directory the test owns (opened to every user: as root the proxy runs as {@code nobody}). A test
 * that needs a proxy whose binary is missing is skipped with a message ({@code .ci/run} installs
 * both). {@link #close()} stops the process; idempotent.
 */
final class ProxyProcess implements AutoCloseable {

  /** HAProxy's client and server timeouts: longer than any wait or term of the tests. */
  static final Duration HAPROXY_TIMEOUT = Duration.ofMinutes(30);

  private final String name;
  private final Process process;
  private final int port;
  private final TestDatabase db;

  private ProxyProcess(String name, Process process, int port, TestDatabase db) {
    this.name = name;
    this.process = process;
    this.port = port;
    this.db = db;
  }

  /**
   * Starts PgBouncer in front of the test database's server.
   *
   * @param db the database (its server is the pooler's)
   * @param dir the test's directory for configuration and logs
   * @param poolMode {@code session} or {@code transaction}
   * @param poolSize server connections per database and user
   * @param settings more {@code [pgbouncer]} settings, e.g. {@code idle_transaction_timeout = 1}
   * @return the running pooler, accepting connections
   */
  static ProxyProcess pgbouncer(
      TestDatabase db, Path dir, String poolMode, int poolSize, String... settings)
      throws Exception {
    Path binary = binary("pgbouncer", "apt-get install pgbouncer");
    Matcher m = hostPort(db);
    int port = freePort();
    open(dir);
    write(
        dir.resolve("pgbouncer.ini"),
        String.join(
            "\n",
            "[databases]",
            "* = host=" + m.group(1) + " port=" + m.group(2),
            "[pgbouncer]",
            "listen_addr = 127.0.0.1",
            "listen_port = " + port,
            "unix_socket_dir =",
            "auth_type = trust",
            "auth_file = " + dir.resolve("users.txt"),
            "pool_mode = " + poolMode,
            "server_round_robin = 1",
            "default_pool_size = " + poolSize,
            "ignore_startup_parameters = extra_float_digits,options",
            "logfile = " + dir.resolve("pgbouncer.log"),
            String.join("\n", settings),
            ""));
    write(dir.resolve("users.txt"), "\"" + db.user() + "\" \"\"\n");
    return start(
        "pgbouncer-" + poolMode,
        List.of(binary.toString(), dir.resolve("pgbouncer.ini").toString()),
        dir,
        port,
        db);
  }

  /**
   * Starts HAProxy in TCP mode in front of the test database's server, as a Patroni or HA setup
   * puts it in front of the primary, with {@link #HAPROXY_TIMEOUT} as its client and server
   * timeouts.
   *
   * @param db the database (its server is the backend)
   * @param dir the test's directory for configuration
   * @return the running proxy, accepting connections
   */
  static ProxyProcess haproxy(TestDatabase db, Path dir) throws Exception {
    return haproxy(db, dir, HAPROXY_TIMEOUT);
  }

  /**
   * Starts HAProxy in TCP mode with the given client and server timeouts (whole seconds).
   *
   * @param db the database (its server is the backend)
   * @param dir the test's directory for configuration
   * @param timeout HAProxy's {@code timeout client} and {@code timeout server}
   * @return the running proxy, accepting connections
   */
  static ProxyProcess haproxy(TestDatabase db, Path dir, Duration timeout) throws Exception {
    Path binary = binary("haproxy", "apt-get install haproxy");
    Matcher m = hostPort(db);
    int port = freePort();
    open(dir);
    long seconds = timeout.toSeconds();
    write(
        dir.resolve("haproxy.cfg"),
        String.join(
            "\n",
            "global",
            "  maxconn 200",
            "defaults",
            "  mode tcp",
            "  timeout connect 5s",
            "  timeout client " + seconds + "s",
            "  timeout server " + seconds + "s",
            "listen postgres",
            "  bind 127.0.0.1:" + port,
            "  server primary " + m.group(1) + ":" + m.group(2),
            ""));
    return start(
        "haproxy",
        List.of(binary.toString(), "-db", "-f", dir.resolve("haproxy.cfg").toString()),
        dir,
        port,
        db);
  }

  /** The proxy's port on 127.0.0.1. */
  int port() {
    return port;
  }

  /** The test database's URL through this proxy. */
  String jdbcUrl() {
    return "jdbc:postgresql://127.0.0.1:" + port + "/" + db.name();
  }

  /** A non-pooling data source through this proxy. */
  PGSimpleDataSource dataSource() {
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setUrl(jdbcUrl());
    ds.setUser(db.user());
    if (db.password() != null) {
      ds.setPassword(db.password());
    }
    return ds;
  }

  @Override
  public void close() {
    process.destroy();
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public String toString() {
    return name + " on 127.0.0.1:" + port;
  }

  private static ProxyProcess start(
      String name, List<String> command, Path dir, int port, TestDatabase db) throws Exception {
    List<String> cmd = new ArrayList<>();
    if ("root".equals(System.getProperty("user.name"))) {
      cmd.addAll(List.of("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"));
    }
    cmd.addAll(command);
    Process p =
        new ProcessBuilder(cmd)
            .redirectErrorStream(true)
            .redirectOutput(dir.resolve(name + ".out").toFile())
            .start();
    ProxyProcess proxy = new ProxyProcess(name, p, port, db);
    try {
      await()
          .atMost(Duration.ofSeconds(20))
          .ignoreExceptions()
          .until(
              () -> {
                Properties props = new Properties();
                props.setProperty("user", db.user());
                if (db.password() != null) {
                  props.setProperty("password", db.password());
                }
                try (Connection c = DriverManager.getConnection(proxy.jdbcUrl(), props)) {
                  return c.isValid(2);
                }
              });
    } catch (RuntimeException e) {
      proxy.close();
      throw new IllegalStateException(
          name
              + " did not accept connections; its output: "
              + Files.readString(dir.resolve(name + ".out")),
          e);
    }
    return proxy;
  }

  private static Path binary(String name, String install) {
    for (String d : List.of("/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin")) {
      Path p = Path.of(d, name);
      if (Files.isExecutable(p)) {
        return p;
      }
    }
    Assumptions.abort(name + " is not installed (Debian: " + install + "); skipping");
    throw new AssertionError("unreachable");
  }

  private static Matcher hostPort(TestDatabase db) {
    Matcher m = Pattern.compile("^jdbc:postgresql://([^:/]+):(\\d+)/.*").matcher(db.jdbcUrl());
    Assumptions.assumeTrue(m.matches(), "needs a host:port URL, but was " + db.jdbcUrl());
    return m;
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  private static void open(Path dir) throws IOException {
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
  }

  private static void write(Path file, String text) throws IOException {
    Files.writeString(file, text);
    Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-rw-rw-"));
  }
}
