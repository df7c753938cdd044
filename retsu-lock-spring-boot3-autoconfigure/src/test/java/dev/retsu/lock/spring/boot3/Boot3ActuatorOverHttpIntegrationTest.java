package dev.retsu.lock.spring.boot3;

import dev.retsu.lock.spring.boot.AbstractActuatorOverHttpIntegrationTest;

/** {@link AbstractActuatorOverHttpIntegrationTest} on Spring Boot 3. */
class Boot3ActuatorOverHttpIntegrationTest extends AbstractActuatorOverHttpIntegrationTest {
  Boot3ActuatorOverHttpIntegrationTest() {
    super(Boot3Line.LINE);
  }
}
