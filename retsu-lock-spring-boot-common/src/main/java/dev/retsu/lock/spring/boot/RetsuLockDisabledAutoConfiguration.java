package dev.retsu.lock.spring.boot;

import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.context.annotation.Bean;

/**
 * With {@code retsu.lock.enabled=false}: no leader, no session, no health, and every {@link
 * LeaderOnly} method skipped, as on a standby, so that turning the library off never runs a
 * leader-only job on every replica at once. Tests that want the job to run use {@code
 * retsu.lock.leaders.<name>.test-mode=always-leader} instead.
 */
@AutoConfiguration
@ConditionalOnBooleanProperty(name = "retsu.lock.enabled", havingValue = false)
public class RetsuLockDisabledAutoConfiguration {

  /** Creates the auto-configuration. */
  public RetsuLockDisabledAutoConfiguration() {}

  @Bean
  static LeaderOnlyBeanPostProcessor retsuLeaderOnlyBeanPostProcessor() {
    return LeaderOnlyBeanPostProcessor.skipping();
  }
}
