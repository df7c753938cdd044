package dev.retsu.lock.spring.boot4;

import dev.retsu.lock.spring.boot.AbstractStandbyReasonAndYieldIntegrationTest;

/** {@link AbstractStandbyReasonAndYieldIntegrationTest} on Spring Boot 4. */
class Boot4StandbyReasonAndYieldIntegrationTest
    extends AbstractStandbyReasonAndYieldIntegrationTest {
  Boot4StandbyReasonAndYieldIntegrationTest() {
    super(Boot4Line.LINE);
  }
}
