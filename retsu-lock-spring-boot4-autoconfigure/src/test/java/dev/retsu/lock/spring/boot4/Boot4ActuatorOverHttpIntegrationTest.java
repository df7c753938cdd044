package dev.retsu.lock.spring.boot4;

import dev.retsu.lock.spring.boot.AbstractActuatorOverHttpIntegrationTest;

/** {@link AbstractActuatorOverHttpIntegrationTest} on Spring Boot 4. */
class Boot4ActuatorOverHttpIntegrationTest extends AbstractActuatorOverHttpIntegrationTest {
  Boot4ActuatorOverHttpIntegrationTest() {
    super(Boot4Line.LINE);
  }
}
