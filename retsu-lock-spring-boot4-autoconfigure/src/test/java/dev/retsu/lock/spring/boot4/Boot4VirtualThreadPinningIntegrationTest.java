package dev.retsu.lock.spring.boot4;

import dev.retsu.lock.spring.boot.AbstractVirtualThreadPinningIntegrationTest;
import org.springframework.boot.autoconfigure.task.TaskSchedulingAutoConfiguration;

/** {@link AbstractVirtualThreadPinningIntegrationTest} on Spring Boot 4. */
class Boot4VirtualThreadPinningIntegrationTest extends AbstractVirtualThreadPinningIntegrationTest {
  Boot4VirtualThreadPinningIntegrationTest() {
    super(Boot4Line.LINE, TaskSchedulingAutoConfiguration.class);
  }
}
