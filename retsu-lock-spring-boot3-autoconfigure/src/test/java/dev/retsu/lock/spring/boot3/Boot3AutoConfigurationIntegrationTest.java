package dev.retsu.lock.spring.boot3;

import dev.retsu.lock.spring.boot.AbstractRetsuLockAutoConfigurationIntegrationTest;

/** {@link AbstractRetsuLockAutoConfigurationIntegrationTest} on Spring Boot 3. */
class Boot3AutoConfigurationIntegrationTest
    extends AbstractRetsuLockAutoConfigurationIntegrationTest {
  Boot3AutoConfigurationIntegrationTest() {
    super(Boot3Line.LINE);
  }
}
