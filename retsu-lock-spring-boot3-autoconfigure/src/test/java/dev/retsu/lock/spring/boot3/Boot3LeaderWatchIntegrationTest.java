package dev.retsu.lock.spring.boot3;

import dev.retsu.lock.spring.boot.AbstractLeaderWatchIntegrationTest;

/** {@link AbstractLeaderWatchIntegrationTest} on Spring Boot 3. */
class Boot3LeaderWatchIntegrationTest extends AbstractLeaderWatchIntegrationTest {
  Boot3LeaderWatchIntegrationTest() {
    super(Boot3Line.LINE);
  }
}
