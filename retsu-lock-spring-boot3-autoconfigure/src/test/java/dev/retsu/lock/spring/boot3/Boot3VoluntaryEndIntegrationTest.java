package dev.retsu.lock.spring.boot3;

import dev.retsu.lock.spring.boot.AbstractVoluntaryEndIntegrationTest;

/** {@link AbstractVoluntaryEndIntegrationTest} on Spring Boot 3. */
class Boot3VoluntaryEndIntegrationTest extends AbstractVoluntaryEndIntegrationTest {
  Boot3VoluntaryEndIntegrationTest() {
    super(Boot3Line.LINE);
  }
}
