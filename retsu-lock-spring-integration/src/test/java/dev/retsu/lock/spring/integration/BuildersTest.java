package dev.retsu.lock.spring.integration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retsu.lock.LockKey;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;
import org.springframework.integration.leader.DefaultCandidate;

/** Defaults, keys and the values the builders refuse, with no database. */
class BuildersTest {

  private final PGSimpleDataSource ds = new PGSimpleDataSource();

  @Test
  void rolesAndKeysLiveInTheSpringIntegrationNamespaceByDefault() {
    RetsuLeaderInitiator initiator =
        RetsuLeaderInitiator.builder(ds, new DefaultCandidate("n", "cluster")).build();
    assertThat(initiator.key()).isEqualTo(LockKey.named("spring-integration", "cluster"));
    assertThat(initiator.isAutoStartup()).isTrue();
    assertThat(initiator.getPhase()).isEqualTo(Integer.MAX_VALUE - 1000);
    assertThat(initiator.getContext().isLeader()).isFalse();
    assertThat(initiator.currentTerm()).isEmpty();
    initiator.destroy();
    RetsuLockRegistry registry = RetsuLockRegistry.builder(ds).namespace("billing").build();
    assertThat(registry.key("orders")).isEqualTo(LockKey.named("billing", "orders"));
    assertThat(RetsuLockRegistry.of(ds).key("orders"))
        .isEqualTo(LockKey.named("spring-integration", "orders"));
  }

  @Test
  void initiatorBuilderRefusesBadValuesNamingThem() {
    RetsuLeaderInitiator.Builder b =
        RetsuLeaderInitiator.builder(ds, new DefaultCandidate("n", "cluster"));
    assertThatThrownBy(() -> b.namespace(""))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("namespace must not be blank, but was ''");
    assertThatThrownBy(() -> b.retryInterval(Duration.ofMillis(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("retryInterval must be from PT0.01S to 24 days, but was PT0.001S");
    assertThatThrownBy(() -> b.yieldCooldown(Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("yieldCooldown must be from PT0S to 24 days, but was PT-1S");
    // the loop's own checks run at build(), on the customized options
    b.loop(l -> l.refreshTimeout(Duration.ofSeconds(-5)));
    assertThatThrownBy(b::build)
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("refreshTimeout");
  }

  @Test
  void registryBuilderRefusesBadValuesNamingThem() {
    RetsuLockRegistry.Builder b = RetsuLockRegistry.builder(ds);
    assertThatThrownBy(() -> b.waitSlice(Duration.ofMillis(5)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("waitSlice must be from PT0.01S to 24 days, but was PT0.005S");
    assertThatThrownBy(() -> b.roundTripTimeout(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("roundTripTimeout must be from PT0.001S to 24 days, but was PT0S");
    assertThatThrownBy(() -> b.candidateId(""))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("candidateId");
  }
}
