package dev.retsu.lock.spring.integration.example;

import dev.retsu.lock.spring.integration.RetsuLeaderInitiator;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.integration.annotation.InboundChannelAdapter;
import org.springframework.integration.annotation.Poller;
import org.springframework.integration.annotation.Role;
import org.springframework.integration.channel.QueueChannel;
import org.springframework.integration.config.EnableIntegration;
import org.springframework.integration.leader.DefaultCandidate;

// snippet:spring-integration/initiator
/**
 * A role-based setup on advisory locks: the inbound channel adapter in role {@code cluster} runs
 * only while this node leads the role. Coming from {@code LockRegistryLeaderInitiator}, the
 * initiator bean is the one that changes; the application supplies the {@link DataSource}.
 */
@Configuration
@EnableIntegration
public class ClusterConfiguration {

  @Bean
  public QueueChannel ticks() {
    return new QueueChannel();
  }

  @Bean
  @InboundChannelAdapter(
      channel = "ticks",
      poller = @Poller(fixedDelay = "50"),
      autoStartup = "false") // the role's controller starts it on this node's grant
  @Role("cluster")
  public Supplier<String> tick() {
    return () -> "tick";
  }

  @Bean
  public RetsuLeaderInitiator leaderInitiator(DataSource dataSource) {
    return RetsuLeaderInitiator.builder(dataSource, new DefaultCandidate("node-a", "cluster"))
        .build();
  }
}
// end-snippet
