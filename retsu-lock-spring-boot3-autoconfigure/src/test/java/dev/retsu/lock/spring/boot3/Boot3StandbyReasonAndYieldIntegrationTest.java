package dev.retsu.lock.spring.boot3;

import dev.retsu.lock.spring.boot.AbstractStandbyReasonAndYieldIntegrationTest;

/** {@link AbstractStandbyReasonAndYieldIntegrationTest} on Spring Boot 3. */
class Boot3StandbyReasonAndYieldIntegrationTest
    extends AbstractStandbyReasonAndYieldIntegrationTest {
  Boot3StandbyReasonAndYieldIntegrationTest() {
    super(Boot3Line.LINE);
  }
}
