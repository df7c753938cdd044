package dev.retsu.lock.spring.boot3;

import dev.retsu.lock.spring.boot.AbstractVirtualThreadPinningIntegrationTest;
import org.springframework.boot.autoconfigure.task.TaskSchedulingAutoConfiguration;

/** {@link AbstractVirtualThreadPinningIntegrationTest} on Spring Boot 3. */
class Boot3VirtualThreadPinningIntegrationTest extends AbstractVirtualThreadPinningIntegrationTest {
  Boot3VirtualThreadPinningIntegrationTest() {
    super(Boot3Line.LINE, TaskSchedulingAutoConfiguration.class);
  }
}
