package dev.retsu.lock.spring.boot3;

import dev.retsu.lock.spring.boot.RetsuLeaders;
import dev.retsu.lock.spring.boot.RetsuLockAutoConfiguration;
import org.springframework.boot.actuate.autoconfigure.health.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.actuate.health.HealthIndicator;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * The health indicator {@code retsuLock} when Spring Boot 3.5's spring-boot-actuator is present;
 * off with {@code management.health.retsu-lock.enabled=false}.
 */
@AutoConfiguration(after = RetsuLockAutoConfiguration.class)
@ConditionalOnClass(HealthIndicator.class)
@ConditionalOnBean(RetsuLeaders.class)
@ConditionalOnEnabledHealthIndicator("retsu-lock")
public class RetsuLockHealthAutoConfiguration {

  /** Creates the auto-configuration. */
  public RetsuLockHealthAutoConfiguration() {}

  @Bean
  @ConditionalOnMissingBean(name = "retsuLockHealthIndicator")
  RetsuLockHealthIndicator retsuLockHealthIndicator(RetsuLeaders leaders) {
    return new RetsuLockHealthIndicator(leaders);
  }
}
