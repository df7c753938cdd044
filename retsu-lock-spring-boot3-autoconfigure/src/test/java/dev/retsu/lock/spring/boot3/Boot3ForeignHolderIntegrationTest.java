package dev.retsu.lock.spring.boot3;

import dev.retsu.lock.spring.boot.AbstractForeignHolderIntegrationTest;

/** {@link AbstractForeignHolderIntegrationTest} on Spring Boot 3. */
class Boot3ForeignHolderIntegrationTest extends AbstractForeignHolderIntegrationTest {
  Boot3ForeignHolderIntegrationTest() {
    super(Boot3Line.LINE);
  }
}
