package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.testing.EmbeddedPostgresServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The smoke set of the version matrix, in every build: the server contract on the oldest PostgreSQL
 * line claimed (zonky's binaries of {@code retsu.tests.postgres.smoke}, which core's POM copies
 * into {@code target/postgres-smoke} on Linux x86_64; skipped where they are absent). The whole
 * suite on each line is {@code -Ppostgres-14} .. {@code -Ppostgres-17}.
 */
class OldestPostgresContractIntegrationTest extends ServerContractTests {

  private static EmbeddedPostgresServer server;

  @BeforeAll
  static void start() throws IOException {
    Path dir = Path.of("target", "postgres-smoke");
    List<Path> jars;
    try (Stream<Path> s = Files.exists(dir) ? Files.list(dir) : Stream.empty()) {
      jars = s.filter(p -> p.toString().endsWith(".jar")).collect(Collectors.toList());
    }
    Assumptions.assumeTrue(
        jars.size() == 1,
        "no PostgreSQL binaries jar in " + dir + " (core's POM copies one on Linux x86_64)");
    server = EmbeddedPostgresServer.builder().binariesJar(jars.get(0)).start();
  }

  @AfterAll
  static void stop() {
    if (server != null) {
      server.close();
    }
  }

  @Override
  DataSource dataSource() {
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setUrl(server.jdbcUrl("postgres"));
    ds.setUser(server.user());
    ds.setPassword(server.password());
    return ds;
  }

  @Override
  void terminate(int pid) throws Exception {
    try (Connection c = server.connect("postgres");
        PreparedStatement ps = c.prepareStatement("SELECT pg_terminate_backend(?, 5000)")) {
      ps.setInt(1, pid);
      ps.execute();
    }
  }

  @Test
  void theSmokeServerIsTheLineTheBuildAskedFor() throws Exception {
    String wanted = System.getProperty("retsu.tests.postgres.smoke");
    assertThat(wanted).as("retsu.tests.postgres.smoke, set by the parent pom").isNotBlank();
    String[] parts = wanted.split("\\.");
    try (Connection c = server.connect("postgres");
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT current_setting('server_version_num')::int")) {
      rs.next();
      int num = rs.getInt(1);
      assertThat(num / 10000 + "." + num % 10000).isEqualTo(parts[0] + "." + parts[1]);
    }
  }
}
