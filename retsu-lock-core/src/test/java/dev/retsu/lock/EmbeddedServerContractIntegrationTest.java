package dev.retsu.lock;

import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;

/** The contract on the JVM's shared test server (embedded PostgreSQL 18 by default). */
@ExtendWith(PostgresExtension.class)
class EmbeddedServerContractIntegrationTest extends ServerContractTests {

  private static TestDatabase db;

  @BeforeAll
  static void database(TestDatabase database) {
    db = database;
  }

  @Override
  DataSource dataSource() {
    return db.dataSource();
  }

  @Override
  void terminate(int pid) throws Exception {
    db.terminateBackend(pid);
  }
}
