package dev.retsu.lock.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retsu.lock.testing.PostgresServer.ShutdownMode;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class EmbeddedPostgresServerIntegrationTest {

  private static EmbeddedPostgresServer server;

  @BeforeAll
  static void start() {
    server = EmbeddedPostgresServer.startDefault();
  }

  @AfterAll
  static void stop() {
    server.close();
  }

  @Test
  void servesQueriesOnLoopback() throws SQLException {
    try (Connection c = server.connect("postgres");
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT current_user, inet_server_addr()::text")) {
      rs.next();
      assertThat(rs.getString(1)).isEqualTo("postgres");
      assertThat(rs.getString(2)).startsWith("127.0.0.1");
    }
  }

  /**
   * The embedded server runs the PostgreSQL line the build asked for ({@code retsu.tests.postgres},
   * the zonky binaries version, which {@code -Ppostgres-14} .. {@code -Ppostgres-17} change), so a
   * row of the version matrix cannot pass on the default binaries by mistake.
   */
  @Test
  void embeddedServerIsTheVersionTheBuildAskedFor() throws SQLException {
    String wanted = System.getProperty("retsu.tests.postgres");
    assertThat(wanted)
        .as("retsu.tests.postgres, set by the parent pom")
        .matches("\\d+\\.\\d+\\.\\d+");
    String[] parts = wanted.split("\\.");
    try (Connection c = server.connect("postgres");
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT current_setting('server_version_num')::int")) {
      rs.next();
      int num = rs.getInt(1);
      assertThat(num / 10000 + "." + num % 10000)
          .as("server_version_num %d of the embedded server", num)
          .isEqualTo(parts[0] + "." + parts[1]);
    }
  }

  @Test
  void restartsOnTheSamePortAfterAnImmediateStop() throws SQLException {
    int port = server.port();
    long before = server.postmasterPid();
    Connection survivor = server.connect("postgres");

    server.restart(ShutdownMode.IMMEDIATE);

    assertThat(server.port()).isEqualTo(port);
    assertThat(server.postmasterPid()).isNotEqualTo(before).isPositive();
    assertThatThrownBy(() -> survivor.createStatement().execute("SELECT 1"))
        .isInstanceOf(SQLException.class)
        .satisfies(e -> assertThat(((SQLException) e).getSQLState()).startsWith("08"));
    survivor.close();
    try (Connection c = server.connect("postgres")) {
      assertThat(c.isValid(5)).isTrue();
    }
  }

  @Test
  void rejectsABinDirectoryWithoutPostgres() {
    assertThatThrownBy(() -> EmbeddedPostgresServer.builder().binaries(java.nio.file.Path.of("/")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("binDir must contain an executable 'postgres', but was /");
  }
}
