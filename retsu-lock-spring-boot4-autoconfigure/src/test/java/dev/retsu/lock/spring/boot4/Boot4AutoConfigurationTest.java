package dev.retsu.lock.spring.boot4;

import dev.retsu.lock.spring.boot.AbstractRetsuLockAutoConfigurationTest;

/** {@link AbstractRetsuLockAutoConfigurationTest} on Spring Boot 4. */
class Boot4AutoConfigurationTest extends AbstractRetsuLockAutoConfigurationTest {
  Boot4AutoConfigurationTest() {
    super(Boot4Line.LINE);
  }
}
