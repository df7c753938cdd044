package dev.retsu.lock.spring.boot;

import org.springframework.boot.actuate.autoconfigure.info.ConditionalOnEnabledInfoContributor;
import org.springframework.boot.actuate.info.InfoContributor;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * The info contributor {@code leaderElection} when Actuator is present; off with {@code
 * management.info.leader-election.enabled=false}.
 */
@AutoConfiguration(after = RetsuLockAutoConfiguration.class)
@ConditionalOnClass({InfoContributor.class, ConditionalOnEnabledInfoContributor.class})
@ConditionalOnBean(RetsuLeaders.class)
@ConditionalOnEnabledInfoContributor("leader-election")
public class RetsuLockInfoAutoConfiguration {

  /** Creates the auto-configuration. */
  public RetsuLockInfoAutoConfiguration() {}

  @Bean
  @ConditionalOnMissingBean
  LeaderElectionInfoContributor leaderElectionInfoContributor(RetsuLeaders leaders) {
    return new LeaderElectionInfoContributor(leaders);
  }
}
