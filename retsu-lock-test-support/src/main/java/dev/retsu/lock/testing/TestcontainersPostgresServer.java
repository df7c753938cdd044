package dev.retsu.lock.testing;

import org.testcontainers.DockerClientFactory;
import org.testcontainers.postgresql.PostgreSQLContainer;

/** A PostgreSQL container, used when a Docker engine is reachable. Cannot be restarted. */
final class TestcontainersPostgresServer implements PostgresServer {

  static final String IMAGE = "postgres:17-alpine";

  private final PostgreSQLContainer container;

  private TestcontainersPostgresServer(PostgreSQLContainer container) {
    this.container = container;
  }

  static boolean dockerAvailable() {
    try {
      return DockerClientFactory.instance().isDockerAvailable();
    } catch (RuntimeException | LinkageError e) {
      return false;
    }
  }

  static TestcontainersPostgresServer launch() {
    PostgreSQLContainer container =
        new PostgreSQLContainer(IMAGE).withCommand("postgres", "-c", "max_connections=300");
    container.start();
    return new TestcontainersPostgresServer(container);
  }

  @Override
  public String jdbcUrl(String database) {
    return "jdbc:postgresql://"
        + container.getHost()
        + ":"
        + container.getMappedPort(PostgreSQLContainer.POSTGRESQL_PORT)
        + "/"
        + database;
  }

  @Override
  public String user() {
    return container.getUsername();
  }

  @Override
  public String password() {
    return container.getPassword();
  }

  @Override
  public String describe() {
    return "Testcontainers " + IMAGE;
  }

  @Override
  public void close() {
    container.stop();
  }
}
