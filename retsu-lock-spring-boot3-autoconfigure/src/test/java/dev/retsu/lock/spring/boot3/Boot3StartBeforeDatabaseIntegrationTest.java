package dev.retsu.lock.spring.boot3;

import dev.retsu.lock.spring.boot.AbstractStartBeforeDatabaseIntegrationTest;

/** {@link AbstractStartBeforeDatabaseIntegrationTest} on Spring Boot 3. */
class Boot3StartBeforeDatabaseIntegrationTest extends AbstractStartBeforeDatabaseIntegrationTest {
  Boot3StartBeforeDatabaseIntegrationTest() {
    super(Boot3Line.LINE);
  }
}
