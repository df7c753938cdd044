package dev.retsu.lock.internal.loop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.LeaderLoop;
import org.junit.jupiter.api.Test;

class ContendLoopTest {

  @Test
  void theLoopLogsUnderThePublicClassesNameWithoutImportingIt() {
    assertThat(ContendLoop.LOGGER).isEqualTo(LeaderLoop.class.getName());
  }
}
