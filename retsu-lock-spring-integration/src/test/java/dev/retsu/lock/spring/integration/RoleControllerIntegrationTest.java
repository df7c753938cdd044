package dev.retsu.lock.spring.integration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.spring.integration.example.ClusterConfiguration;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.integration.channel.QueueChannel;
import org.springframework.integration.support.SmartLifecycleRoleController;

/**
 * A role-based setup moves by swapping one bean: an {@code @InboundChannelAdapter} in role {@code
 * cluster} runs only while this node leads, started and stopped by Spring Integration's own {@code
 * SmartLifecycleRoleController} from the initiator's events.
 */
@ExtendWith(PostgresExtension.class)
class RoleControllerIntegrationTest {

  @Test
  void anInboundChannelAdapterInTheRoleRunsOnlyWhileThisNodeLeads(TestDatabase db) {
    try (HikariDataSource pool = SpringIntegrationTesting.pool(db, "roles", 4);
        AnnotationConfigApplicationContext ctx = new AnnotationConfigApplicationContext()) {
      ctx.registerBean(DataSource.class, () -> pool);
      ctx.register(ClusterConfiguration.class);
      ctx.refresh();
      QueueChannel ticks = ctx.getBean("ticks", QueueChannel.class);
      SmartLifecycleRoleController roles = ctx.getBean(SmartLifecycleRoleController.class);
      RetsuLeaderInitiator initiator = ctx.getBean(RetsuLeaderInitiator.class);

      await().atMost(Duration.ofSeconds(30)).until(() -> ticks.receive(100) != null);
      assertThat(roles.allEndpointsRunning("cluster")).isTrue();

      initiator.stop(); // revoked: the role's endpoints stop before the lock is released
      assertThat(roles.noEndpointsRunning("cluster")).isTrue();
      ticks.clear();
      await()
          .during(Duration.ofMillis(500))
          .atMost(Duration.ofSeconds(5))
          .until(() -> ticks.getQueueSize() == 0);

      initiator.start();
      await().atMost(Duration.ofSeconds(30)).until(() -> ticks.receive(100) != null);
    }
  }
}
