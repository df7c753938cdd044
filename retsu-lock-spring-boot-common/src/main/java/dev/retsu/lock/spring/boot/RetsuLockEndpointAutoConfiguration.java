package dev.retsu.lock.spring.boot;

import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * The read-only Actuator endpoint {@code leaders} when Actuator is present and the endpoint is
 * available (exposed, e.g. {@code management.endpoints.web.exposure.include=health,leaders}).
 */
@AutoConfiguration(after = RetsuLockAutoConfiguration.class)
@ConditionalOnClass({Endpoint.class, ConditionalOnAvailableEndpoint.class})
@ConditionalOnBean(RetsuLeaders.class)
@ConditionalOnAvailableEndpoint(LeadersEndpoint.class)
public class RetsuLockEndpointAutoConfiguration {

  /** Creates the auto-configuration. */
  public RetsuLockEndpointAutoConfiguration() {}

  @Bean
  @ConditionalOnMissingBean
  LeadersEndpoint leadersEndpoint(RetsuLeaders leaders) {
    return new LeadersEndpoint(leaders);
  }
}
