package dev.retsu.lock.spring.boot;

import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.ApplicationListener;
import org.springframework.context.annotation.Bean;
import org.springframework.integration.leader.Context;
import org.springframework.integration.leader.event.OnGrantedEvent;
import org.springframework.integration.leader.event.OnRevokedEvent;

/**
 * When spring-integration-core is on the classpath, every {@link LeadershipGrantedEvent} and {@link
 * LeadershipRevokedEvent} is followed, on the same thread, by Spring Integration's {@link
 * OnGrantedEvent} and {@link OnRevokedEvent} for the leader's role ({@code
 * retsu.lock.leaders.<name>.role}, default the name), so an existing {@code
 * SmartLifecycleRoleController} starts and stops its role's endpoints unchanged. The revoked event
 * comes before the lock is released.
 */
@AutoConfiguration(after = RetsuLockAutoConfiguration.class)
@ConditionalOnClass(OnGrantedEvent.class)
@ConditionalOnBean(RetsuLeaders.class)
public class RetsuLockIntegrationAutoConfiguration {

  /** Creates the auto-configuration. */
  public RetsuLockIntegrationAutoConfiguration() {}

  @Bean
  ApplicationListener<LeadershipEvent> retsuLockIntegrationLeaderEvents(
      ApplicationEventPublisher publisher) {
    return event -> {
      RetsuLeader leader = event.getLeader();
      Context context =
          new Context() {
            @Override
            public boolean isLeader() {
              return leader.isLeader();
            }

            @Override
            public String getRole() {
              return leader.role();
            }

            @Override
            public String toString() {
              return "retsu-lock " + leader;
            }
          };
      if (event instanceof LeadershipGrantedEvent) {
        publisher.publishEvent(new OnGrantedEvent(leader, context, leader.role()));
      } else {
        publisher.publishEvent(new OnRevokedEvent(leader, context, leader.role()));
      }
    };
  }
}
