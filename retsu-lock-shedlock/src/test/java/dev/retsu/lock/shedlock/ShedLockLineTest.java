package dev.retsu.lock.shedlock;

import static org.assertj.core.api.Assertions.assertThat;

import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.spring.annotation.SchedulerLock;
import org.junit.jupiter.api.Test;
import org.springframework.core.SpringVersion;

/**
 * The tests run on the ShedLock and Spring Framework the build asked for: 7.6 on Framework 7 by
 * default, 6.10 on Framework 6.2 (the Spring Boot 3.5 line) under {@code -Pshedlock-6}. Without
 * this a profile that failed to swap a jar would pass while testing the default line again.
 */
class ShedLockLineTest {

  @Test
  void theTestsRunOnTheShedLockAndSpringTheBuildAskedFor() {
    String shedlock = System.getProperty("retsu.tests.shedlock");
    String spring = System.getProperty("retsu.tests.spring-framework");
    assertThat(shedlock).as("set by the module's POM").isNotBlank();
    assertThat(jarOf(LockProvider.class)).contains("/shedlock-core/" + shedlock + "/");
    assertThat(jarOf(SchedulerLock.class)).contains("/shedlock-spring/" + shedlock + "/");
    assertThat(SpringVersion.getVersion()).isEqualTo(spring);
  }

  private static String jarOf(Class<?> type) {
    return type.getProtectionDomain().getCodeSource().getLocation().toString();
  }
}
