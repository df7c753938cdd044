package dev.retsu.lock.spring.integration;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.ReadmeSnippets;
import dev.retsu.lock.testing.TestDatabase;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** docs/spring-integration.md shows code that compiles and runs here. */
@ExtendWith(PostgresExtension.class)
class DocsSnippetsIntegrationTest {

  @Test
  void docsShowExactlyTheCodeThatRuns() {
    assertThat(
            ReadmeSnippets.verify(
                Path.of("../docs/spring-integration.md"),
                "spring-integration",
                Path.of(
                    "src/test/java/dev/retsu/lock/spring/integration/example/ClusterConfiguration.java"),
                Path.of(
                    "src/test/java/dev/retsu/lock/spring/integration/DocsSnippetsIntegrationTest.java")))
        .containsExactly("spring-integration/initiator", "spring-integration/registry");
  }

  @Test
  void theRegistrySnippetTakesAndFreesTheKey(TestDatabase db) throws Exception {
    try (HikariDataSource pool = SpringIntegrationTesting.pool(db, "docs", 2)) {
      RetsuLockRegistry registry = registrySnippet(pool);
      assertThat(SpringIntegrationTesting.holderPid(db, registry.key("orders"))).isEqualTo(-1);
      assertThat(held).isPositive();
    }
  }

  private int held;

  private RetsuLockRegistry registrySnippet(DataSource dataSource) throws Exception {
    // snippet:spring-integration/registry
    RetsuLockRegistry registry =
        RetsuLockRegistry.builder(dataSource).candidateId("node-a").build();
    Lock lock = registry.obtain("orders");
    int holderPid = 0;
    if (lock.tryLock(2, TimeUnit.SECONDS)) {
      try {
        // the key "orders" is held by one session of one JVM, for one thread: this one
        holderPid = registry.lease("orders").orElseThrow().backendPid();
      } finally {
        lock.unlock(); // the key is free when unlock returns
      }
    }
    // end-snippet
    held = holderPid;
    return registry;
  }
}
