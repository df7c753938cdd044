package dev.retsu.lock.benchmarks;

import dev.retsu.lock.testing.EmbeddedPostgresServer;
import dev.retsu.lock.testing.PostgresServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The PostgreSQL server the benchmarks run against: embedded (the default, with {@code
 * pg_stat_statements} preloaded) or given by {@code RETSU_BENCH_JDBC_URL} (plus {@code
 * RETSU_BENCH_JDBC_USER} / {@code RETSU_BENCH_JDBC_PASSWORD}). Creates the benchmark database with
 * the peers' lock tables. Closing stops the embedded server.
 */
final class BenchEnv implements AutoCloseable {

  static final String DATABASE = "retsu_bench";

  private final EmbeddedPostgresServer embedded;
  private final String serverUrlPrefix;
  private final String user;
  private final String password;
  final Path outDir;
  final Path logDir;
  final String serverVersion;
  final boolean statementsExtension;

  private BenchEnv(
      EmbeddedPostgresServer embedded,
      String serverUrlPrefix,
      String user,
      String password,
      Path outDir)
      throws SQLException {
    this.embedded = embedded;
    this.serverUrlPrefix = serverUrlPrefix;
    this.user = user;
    this.password = password;
    this.outDir = outDir;
    this.logDir = outDir.resolve("logs");
    try {
      Files.createDirectories(logDir);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    try (Connection c = connect("postgres");
        Statement s = c.createStatement()) {
      s.execute("DROP DATABASE IF EXISTS " + DATABASE + " WITH (FORCE)");
      s.execute("CREATE DATABASE " + DATABASE);
    }
    boolean pgss;
    String version;
    try (Connection c = connect(DATABASE);
        Statement s = c.createStatement()) {
      s.execute(
          "CREATE TABLE shedlock(name VARCHAR(64) NOT NULL, lock_until TIMESTAMP NOT NULL,"
              + " locked_at TIMESTAMP NOT NULL, locked_by VARCHAR(255) NOT NULL,"
              + " PRIMARY KEY (name))");
      s.execute(springLockTableDdl());
      try (ResultSet rs = s.executeQuery("SHOW server_version")) {
        rs.next();
        version = rs.getString(1);
      }
      try {
        s.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
        s.execute("SELECT pg_stat_statements_reset()");
        pgss = true;
      } catch (SQLException e) {
        pgss = false;
      }
    }
    this.serverVersion = version;
    this.statementsExtension = pgss;
  }

  /**
   * Starts the server.
   *
   * @param outDir where results and logs go
   * @param maxConnections max_connections of an embedded server
   */
  static BenchEnv start(Path outDir, int maxConnections) throws SQLException {
    String url = System.getenv("RETSU_BENCH_JDBC_URL");
    if (url != null && !url.isBlank()) {
      Matcher m = Pattern.compile("^(jdbc:postgresql://[^/?]+/)[^?]*$").matcher(url.trim());
      if (!m.matches()) {
        throw new IllegalArgumentException(
            "RETSU_BENCH_JDBC_URL must be jdbc:postgresql://host:port/database, but was " + url);
      }
      String u = System.getenv("RETSU_BENCH_JDBC_USER");
      String p = System.getenv("RETSU_BENCH_JDBC_PASSWORD");
      return new BenchEnv(null, m.group(1), u == null ? "postgres" : u, p == null ? "" : p, outDir);
    }
    EmbeddedPostgresServer server =
        EmbeddedPostgresServer.builder()
            .setting("shared_preload_libraries", "pg_stat_statements")
            .setting("pg_stat_statements.track_utility", "on")
            .setting("max_connections", Integer.toString(maxConnections))
            // Durable commits by default, as in production: the fencing token's commit waits for
            // its WAL flush, and takeover figures include that (RETSU_BENCH_FSYNC=off to compare).
            .setting("fsync", fsync())
            .setting("full_page_writes", fsync())
            // Room for 50,000+ advisory locks: the shared lock table holds
            // max_locks_per_transaction x (max_connections + max_prepared_transactions) entries.
            .setting("max_locks_per_transaction", "256")
            .start();
    try {
      return new BenchEnv(server, server.jdbcUrl(""), server.user(), "", outDir);
    } catch (SQLException | RuntimeException e) {
      server.close();
      throw e;
    }
  }

  String jdbcUrl() {
    return serverUrlPrefix + DATABASE;
  }

  String user() {
    return user;
  }

  String password() {
    return password;
  }

  private static String fsync() {
    String v = System.getenv("RETSU_BENCH_FSYNC");
    return v == null || v.isBlank() ? "on" : v.trim();
  }

  String describe() {
    String settings;
    try (Connection c = connect();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT current_setting('fsync'), current_setting('synchronous_commit'),"
                    + " current_setting('max_locks_per_transaction'),"
                    + " current_setting('max_connections'), current_setting('deadlock_timeout')")) {
      rs.next();
      settings =
          " (fsync "
              + rs.getString(1)
              + ", synchronous_commit "
              + rs.getString(2)
              + ", max_locks_per_transaction "
              + rs.getString(3)
              + ", max_connections "
              + rs.getString(4)
              + ", deadlock_timeout "
              + rs.getString(5)
              + ")";
    } catch (SQLException e) {
      settings = " (settings unreadable: SQLState " + e.getSQLState() + ")";
    }
    return (embedded != null
            ? "embedded PostgreSQL " + serverVersion
            : "PostgreSQL " + serverVersion + " from RETSU_BENCH_JDBC_URL")
        + settings;
  }

  /** Returns the postmaster's pid when it runs on this machine under our control, else -1. */
  long postmasterPid() {
    return embedded != null ? embedded.postmasterPid() : -1;
  }

  /** Returns the embedded server's log file (its stderr), or null for a server of the URL. */
  Path serverLog() {
    return embedded != null ? embedded.dataDirectory().getParent().resolve("postgres.log") : null;
  }

  /** Returns whether {@link #restartImmediately()} works: the server is embedded, ours to stop. */
  boolean canRestart() {
    return embedded != null;
  }

  /**
   * Stops the embedded server as after a crash ({@code SIGQUIT}: every backend quits at once, no
   * checkpoint) and starts it again on the same port and data; returns once it accepts connections.
   */
  void restartImmediately() {
    if (embedded == null) {
      throw new IllegalStateException(
          "only an embedded server can be restarted, but the benchmarks run on " + describe());
    }
    embedded.restart(PostgresServer.ShutdownMode.IMMEDIATE);
  }

  Connection connect(String database) throws SQLException {
    Properties props = new Properties();
    props.setProperty("user", user);
    if (!password.isEmpty()) {
      props.setProperty("password", password);
    }
    props.setProperty("ApplicationName", "bench-harness");
    return DriverManager.getConnection(serverUrlPrefix + database, props);
  }

  Connection connect() throws SQLException {
    return connect(DATABASE);
  }

  /**
   * Returns whether a retsu candidate in WAIT mode is queued for a lock: its waiter session (named
   * by the library) has an advisory lock request that is not granted. A waiting standby reports its
   * first attempt only when the wait is re-armed, so readiness is read from the server instead.
   */
  boolean waiting(String candidateId) {
    try (Connection c = connect();
        java.sql.PreparedStatement ps =
            c.prepareStatement(
                "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
                    + " WHERE l.locktype = 'advisory' AND NOT l.granted"
                    + " AND a.application_name = ?")) {
      ps.setString(1, "retsu-lock:" + candidateId);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1) > 0;
      }
    } catch (SQLException e) {
      return false;
    }
  }

  /** The INT_LOCK DDL that spring-integration-jdbc ships for PostgreSQL. */
  static String springLockTableDdl() {
    String resource = "org/springframework/integration/jdbc/schema-postgresql.sql";
    try (InputStream in = BenchEnv.class.getClassLoader().getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException("spring-integration-jdbc has no " + resource);
      }
      String sql = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      Matcher m = Pattern.compile("(?is)CREATE TABLE INT_LOCK\\b.*?\\);").matcher(sql);
      if (!m.find()) {
        throw new IllegalStateException("no CREATE TABLE INT_LOCK in " + resource);
      }
      String ddl = m.group();
      return ddl.substring(0, ddl.length() - 1);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void close() {
    if (embedded != null) {
      embedded.close();
    }
  }
}
