package dev.retsu.lock.spring.boot4;

import dev.retsu.lock.spring.boot.AbstractStartBeforeDatabaseIntegrationTest;

/** {@link AbstractStartBeforeDatabaseIntegrationTest} on Spring Boot 4. */
class Boot4StartBeforeDatabaseIntegrationTest extends AbstractStartBeforeDatabaseIntegrationTest {
  Boot4StartBeforeDatabaseIntegrationTest() {
    super(Boot4Line.LINE);
  }
}
