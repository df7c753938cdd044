package dev.retsu.lock.shedlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retsu.lock.LockKey;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/** The builder's defaults and the values it refuses, with no database. */
class RetsuLockProviderBuilderTest {

  private final PGSimpleDataSource ds = new PGSimpleDataSource();

  @Test
  void lockNamesAreKeyedInTheShedlockNamespaceByDefault() {
    try (RetsuLockProvider p = RetsuLockProvider.of(ds)) {
      assertThat(p.namespace()).isEqualTo("shedlock");
      assertThat(p.key("nightly-report")).isEqualTo(LockKey.named("shedlock", "nightly-report"));
    }
    try (RetsuLockProvider p = RetsuLockProvider.builder(ds).namespace("billing").build()) {
      assertThat(p.key("nightly-report")).isEqualTo(LockKey.named("billing", "nightly-report"));
    }
  }

  @Test
  void builderRefusesBadValuesNamingThem() {
    RetsuLockProvider.Builder b = RetsuLockProvider.builder(ds);
    assertThatThrownBy(() -> RetsuLockProvider.builder(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("dataSource");
    assertThatThrownBy(() -> b.namespace(" "))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("namespace must not be blank, but was ' '");
    assertThatThrownBy(() -> b.roundTripTimeout(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("roundTripTimeout must be from 1 ms to 24 days, but was PT0S");
    assertThatThrownBy(() -> b.serverKeepalives(Duration.ofMillis(1500), Duration.ofSeconds(1), 3))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("keepalive idle must be a whole number of seconds, at least 1, but was PT1.5S");
    assertThatThrownBy(() -> b.serverKeepalives(Duration.ofSeconds(5), Duration.ofSeconds(1), 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("keepalive count must be positive, but was 0");
    assertThatThrownBy(() -> b.candidateId(""))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("candidateId");
  }

  @Test
  void closeIsIdempotentAndStopsTheTimerThread() {
    RetsuLockProvider p = RetsuLockProvider.of(ds);
    p.close();
    p.close();
    assertThat(p.timer().isShutdown()).isTrue();
    assertThat(p.toString()).contains("closed");
  }
}
