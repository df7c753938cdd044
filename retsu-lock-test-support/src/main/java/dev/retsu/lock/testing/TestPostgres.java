package dev.retsu.lock.testing;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one PostgreSQL server of this JVM, chosen once, in this order:
 *
 * <ol>
 *   <li>{@code RETSU_TEST_JDBC_URL} when set (credentials from {@code RETSU_TEST_JDBC_USER} and
 *       {@code RETSU_TEST_JDBC_PASSWORD}, or in the URL);
 *   <li>else a Testcontainers {@code postgres} container when a Docker engine is reachable;
 *   <li>else embedded PostgreSQL binaries from Maven Central ({@link EmbeddedPostgresServer}).
 * </ol>
 *
 * <p>The choice is logged. Setting {@code RETSU_TEST_POSTGRES=embedded} skips the Docker probe.
 */
public final class TestPostgres {

  private static final Logger LOG = LoggerFactory.getLogger(TestPostgres.class);
  private static final ReentrantLock LOCK = new ReentrantLock();
  private static PostgresServer shared;

  private TestPostgres() {}

  /**
   * Returns the shared server, starting it on first use.
   *
   * @return the server of this JVM
   */
  public static PostgresServer shared() {
    LOCK.lock();
    try {
      if (shared == null) {
        shared = choose();
        LOG.info("Tests use {}", shared.describe());
      }
      return shared;
    } finally {
      LOCK.unlock();
    }
  }

  private static PostgresServer choose() {
    String url = System.getenv("RETSU_TEST_JDBC_URL");
    if (url != null && !url.isBlank()) {
      return new ExternalPostgresServer(
          url.trim(),
          System.getenv("RETSU_TEST_JDBC_USER"),
          System.getenv("RETSU_TEST_JDBC_PASSWORD"));
    }
    String forced = System.getenv("RETSU_TEST_POSTGRES");
    if (!"embedded".equalsIgnoreCase(forced) && dockerConfigured()) {
      if (TestcontainersPostgresServer.dockerAvailable()) {
        return TestcontainersPostgresServer.launch();
      }
      LOG.info("No Docker engine answers; falling back to embedded PostgreSQL");
    }
    return EmbeddedPostgresServer.startDefault();
  }

  /** Cheap pre-check so machines without any Docker setup skip the slow client probe. */
  private static boolean dockerConfigured() {
    if (System.getenv("DOCKER_HOST") != null) {
      return true;
    }
    if (Files.exists(Path.of("/var/run/docker.sock"))) {
      return true;
    }
    String home = System.getProperty("user.home");
    return home != null
        && (Files.exists(Path.of(home, ".testcontainers.properties"))
            || Files.exists(Path.of(home, ".docker", "run", "docker.sock")));
  }
}
