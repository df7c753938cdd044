package dev.retsu.lock.examples.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.testing.ChildJvm;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The README's "a PostgreSQL to try it on": {@code java -jar retsu-lock-examples.jar postgres}
 * prints a JDBC URL that takes connections until Ctrl-C, which stops the server.
 */
class PostgresCommandIntegrationTest {

  @Test
  void thePostgresCommandPrintsAUrlThatTakesConnectionsUntilCtrlC() throws Exception {
    try (ChildJvm postgres =
        new ChildJvm(
            "postgres",
            new ProcessBuilder(
                ChildJvm.javaCommand(List.of("-Xmx64m"), Main.class, List.of("postgres")))) {}) {
      await()
          .atMost(Duration.ofSeconds(60))
          .failFast("the command ended before it printed a URL", () -> !postgres.process.isAlive())
          .until(() -> postgres.logged(PostgresCommand.URL_LINE));
      String url =
          postgres.lines().stream()
              .filter(l -> l.startsWith(PostgresCommand.URL_LINE))
              .findFirst()
              .orElseThrow()
              .substring(PostgresCommand.URL_LINE.length());
      assertThat(url).startsWith("jdbc:postgresql://127.0.0.1:").endsWith("/postgres");
      try (Connection c = DriverManager.getConnection(url, "postgres", "");
          Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT 42")) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getInt(1)).isEqualTo(42);
      }
      assertThat(postgres.process.isAlive()).as("runs until it is stopped").isTrue();

      postgres.sigterm(); // as Ctrl-C
      await().atMost(Duration.ofSeconds(30)).until(postgres::exitedAndDrained);
      assertThat(postgres.lines()).contains("PostgreSQL stopped; its data is gone.");
      assertThatThrownBy(() -> DriverManager.getConnection(url, "postgres", "").close())
          .as("the server is gone")
          .isInstanceOf(SQLException.class);
    }
  }
}
