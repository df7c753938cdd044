package dev.retsu.lock.spring.boot4;

import dev.retsu.lock.spring.boot.AbstractLeaderWatchIntegrationTest;

/** {@link AbstractLeaderWatchIntegrationTest} on Spring Boot 4. */
class Boot4LeaderWatchIntegrationTest extends AbstractLeaderWatchIntegrationTest {
  Boot4LeaderWatchIntegrationTest() {
    super(Boot4Line.LINE);
  }
}
