package dev.retsu.lock.spring.boot4;

import dev.retsu.lock.spring.boot.AbstractRetsuLockAutoConfigurationIntegrationTest;

/** {@link AbstractRetsuLockAutoConfigurationIntegrationTest} on Spring Boot 4. */
class Boot4AutoConfigurationIntegrationTest
    extends AbstractRetsuLockAutoConfigurationIntegrationTest {
  Boot4AutoConfigurationIntegrationTest() {
    super(Boot4Line.LINE);
  }
}
