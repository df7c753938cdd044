package dev.retsu.lock.spring.boot4;

import dev.retsu.lock.spring.boot.AbstractForeignHolderIntegrationTest;

/** {@link AbstractForeignHolderIntegrationTest} on Spring Boot 4. */
class Boot4ForeignHolderIntegrationTest extends AbstractForeignHolderIntegrationTest {
  Boot4ForeignHolderIntegrationTest() {
    super(Boot4Line.LINE);
  }
}
