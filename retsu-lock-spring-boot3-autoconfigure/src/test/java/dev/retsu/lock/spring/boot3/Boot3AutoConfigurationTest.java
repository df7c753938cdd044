package dev.retsu.lock.spring.boot3;

import dev.retsu.lock.spring.boot.AbstractRetsuLockAutoConfigurationTest;

/** {@link AbstractRetsuLockAutoConfigurationTest} on Spring Boot 3. */
class Boot3AutoConfigurationTest extends AbstractRetsuLockAutoConfigurationTest {
  Boot3AutoConfigurationTest() {
    super(Boot3Line.LINE);
  }
}
