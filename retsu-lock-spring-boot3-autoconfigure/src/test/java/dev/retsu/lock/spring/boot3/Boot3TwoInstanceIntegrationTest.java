package dev.retsu.lock.spring.boot3;

import dev.retsu.lock.spring.boot.AbstractTwoInstanceIntegrationTest;

/** {@link AbstractTwoInstanceIntegrationTest} on Spring Boot 3: separate JVMs on its class path. */
class Boot3TwoInstanceIntegrationTest extends AbstractTwoInstanceIntegrationTest {
  Boot3TwoInstanceIntegrationTest() {
    super(Boot3Line.LINE);
  }
}
