package dev.retsu.lock.spring.boot4;

import dev.retsu.lock.spring.boot.AbstractVoluntaryEndIntegrationTest;

/** {@link AbstractVoluntaryEndIntegrationTest} on Spring Boot 4. */
class Boot4VoluntaryEndIntegrationTest extends AbstractVoluntaryEndIntegrationTest {
  Boot4VoluntaryEndIntegrationTest() {
    super(Boot4Line.LINE);
  }
}
