package dev.retsu.lock.spring.boot4;

import dev.retsu.lock.spring.boot.AbstractTwoInstanceIntegrationTest;

/** {@link AbstractTwoInstanceIntegrationTest} on Spring Boot 4: separate JVMs on its class path. */
class Boot4TwoInstanceIntegrationTest extends AbstractTwoInstanceIntegrationTest {
  Boot4TwoInstanceIntegrationTest() {
    super(Boot4Line.LINE);
  }
}
