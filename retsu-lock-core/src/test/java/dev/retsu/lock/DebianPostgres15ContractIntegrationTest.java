package dev.retsu.lock;

import dev.retsu.lock.testing.EmbeddedPostgresServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The contract on Debian's PostgreSQL 15 (the version POSTGRES-FACTS.md was verified on), started
 * by this test from {@code /usr/lib/postgresql/15/bin}; skipped where it is not installed.
 */
class DebianPostgres15ContractIntegrationTest extends ServerContractTests {

  private static final Path BIN = Path.of("/usr/lib/postgresql/15/bin");
  private static EmbeddedPostgresServer server;

  @BeforeAll
  static void start() {
    Assumptions.assumeTrue(
        Files.isExecutable(BIN.resolve("postgres")),
        "PostgreSQL 15 is not installed at " + BIN + " (Debian: postgresql-15); skipping");
    server = EmbeddedPostgresServer.builder().binaries(BIN).start();
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
    ds.setUser("postgres");
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
}
