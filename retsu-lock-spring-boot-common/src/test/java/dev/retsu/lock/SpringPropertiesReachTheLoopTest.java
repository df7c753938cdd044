package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.internal.loop.LoopSettings;
import dev.retsu.lock.spring.boot.RetsuLeaders;
import dev.retsu.lock.spring.boot.RetsuLockAutoConfiguration;
import dev.retsu.lock.spring.boot.RetsuLockProperties;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * Every {@code retsu.lock.leaders.<name>.*} property reaches the loop's validated settings (read
 * through core's package-private test seam, hence this package), and the property defaults are
 * core's defaults. No database: the leaders never start.
 */
class SpringPropertiesReachTheLoopTest {

  private final ApplicationContextRunner runner =
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(RetsuLockAutoConfiguration.class))
          .withBean(DataSource.class, PGSimpleDataSource::new)
          .withPropertyValues("retsu.lock.leaders.job.auto-startup=false");

  @Test
  void everyLeaderPropertyReachesTheLoop() {
    runner
        .withPropertyValues(
            "retsu.lock.leaders.job.candidate-id=worker-7",
            "retsu.lock.leaders.job.key.first=42",
            "retsu.lock.leaders.job.key.second=7",
            "retsu.lock.leaders.job.takeover=wait",
            "retsu.lock.leaders.job.retry-interval=3s",
            "retsu.lock.leaders.job.retry-jitter=0.25",
            "retsu.lock.leaders.job.refresh-interval=4s",
            "retsu.lock.leaders.job.refresh-timeout=50s",
            "retsu.lock.leaders.job.failure-policy=exit",
            "retsu.lock.leaders.job.max-backoff=2m",
            "retsu.lock.leaders.job.close-timeout=9s",
            "retsu.lock.leaders.job.wait-timeout=3s",
            "retsu.lock.leaders.job.heartbeat-interval=1s",
            "retsu.lock.leaders.job.self-fence-after=4s",
            "retsu.lock.leaders.job.round-trip-timeout=7s",
            "retsu.lock.leaders.job.server-idle-session-timeout=30s",
            "retsu.lock.leaders.job.server-keepalives.idle=4s",
            "retsu.lock.leaders.job.server-keepalives.interval=1s",
            "retsu.lock.leaders.job.server-keepalives.count=2",
            "retsu.lock.leaders.job.fail-fast=true",
            "retsu.lock.leaders.job.preferred=true",
            "retsu.lock.leaders.job.takeover-delay=6s")
        .run(
            context -> {
              assertThat(context).hasNotFailed();
              LeaderLoop loop = context.getBean(RetsuLeaders.class).get("job").loop().orElseThrow();
              LoopSettings s = loop.settings();
              assertThat(loop.candidateId()).isEqualTo("worker-7");
              assertThat(loop.key()).isEqualTo(LockKey.of(42, 7));
              assertThat(s.takeover()).isEqualTo(TakeoverMode.WAIT);
              assertThat(s.retryInterval()).isEqualTo(Duration.ofSeconds(3));
              assertThat(s.retryJitter()).isEqualTo(0.25);
              assertThat(s.term().refreshInterval()).isEqualTo(Duration.ofSeconds(4));
              assertThat(s.term().refreshTimeout()).isEqualTo(Duration.ofSeconds(50));
              assertThat(s.failurePolicy()).isEqualTo(FailurePolicy.EXIT);
              assertThat(s.maxBackoff()).isEqualTo(Duration.ofMinutes(2));
              assertThat(s.term().closeTimeout()).isEqualTo(Duration.ofSeconds(9));
              assertThat(s.waitTimeout()).isEqualTo(Duration.ofSeconds(3));
              assertThat(s.term().heartbeatInterval()).isEqualTo(Duration.ofSeconds(1));
              assertThat(s.term().selfFenceAfter()).isEqualTo(Duration.ofSeconds(4));
              assertThat(s.term().roundTripTimeout()).isEqualTo(Duration.ofSeconds(7));
              assertThat(s.term().bounds().sessionSettings())
                  .containsEntry("idle_session_timeout", "30000")
                  .containsEntry("tcp_keepalives_idle", "4")
                  .containsEntry("tcp_keepalives_interval", "1")
                  .containsEntry("tcp_keepalives_count", "2");
              assertThat(s.term().failFast()).isTrue();
              assertThat(s.preferred()).isTrue();
              assertThat(s.takeoverDelay()).isEqualTo(Duration.ofSeconds(6));
            });
  }

  @Test
  void retsuLockPreferredIsEveryLeadersDefaultAndALeaderOverridesIt() {
    runner
        .withPropertyValues(
            "retsu.lock.preferred=true",
            "retsu.lock.leaders.other.auto-startup=false",
            "retsu.lock.leaders.other.preferred=false")
        .run(
            context -> {
              RetsuLeaders leaders = context.getBean(RetsuLeaders.class);
              LoopSettings job = leaders.get("job").loop().orElseThrow().settings();
              assertThat(job.preferred()).isTrue();
              assertThat(job.takeover()).isEqualTo(TakeoverMode.WAIT); // core: preferred waits
              assertThat(leaders.get("other").loop().orElseThrow().settings().preferred())
                  .isFalse();
            });
  }

  @Test
  void theOtherKeyFormsAndTheDefaultKey() {
    runner
        .withPropertyValues(
            "retsu.lock.leaders.big.key.value=-5",
            "retsu.lock.leaders.named.key.namespace=billing",
            "retsu.lock.leaders.named.key.name=invoices",
            "retsu.lock.leaders.big.auto-startup=false",
            "retsu.lock.leaders.named.auto-startup=false")
        .run(
            context -> {
              RetsuLeaders leaders = context.getBean(RetsuLeaders.class);
              assertThat(leaders.get("big").key()).isEqualTo(LockKey.of(-5L));
              assertThat(leaders.get("named").key())
                  .isEqualTo(LockKey.named("billing", "invoices"));
              assertThat(leaders.get("job").key()).isEqualTo(LockKey.named("retsu-lock", "job"));
            });
  }

  @Test
  void theDefaultsAreCoresAndTheFailurePolicyIsStepDown() {
    runner.run(
        context -> {
          LoopSettings s =
              context.getBean(RetsuLeaders.class).get("job").loop().orElseThrow().settings();
          LoopSettings core =
              LeaderLoop.builder(new PGSimpleDataSource(), LockKey.of(1L)).build().settings();
          assertThat(s.failurePolicy()).isEqualTo(FailurePolicy.STEP_DOWN);
          // The one default that differs from core's: a context has nobody to catch the
          // exception of a failed first contact, so the starter keeps contending instead.
          assertThat(core.term().failFast()).isTrue();
          assertThat(s.term().failFast()).isFalse();
          assertThat(s.takeover()).isEqualTo(core.takeover());
          assertThat(s.retryInterval()).isEqualTo(core.retryInterval());
          assertThat(s.retryJitter()).isEqualTo(core.retryJitter());
          assertThat(s.term().refreshInterval()).isEqualTo(core.term().refreshInterval());
          assertThat(s.term().refreshTimeout()).isEqualTo(core.term().refreshTimeout());
          assertThat(s.failurePolicy()).isEqualTo(core.failurePolicy());
          assertThat(s.maxBackoff()).isEqualTo(core.maxBackoff());
          assertThat(s.term().closeTimeout()).isEqualTo(core.term().closeTimeout());
          assertThat(s.waitTimeout()).isEqualTo(core.waitTimeout());
          assertThat(s.term().heartbeatInterval()).isEqualTo(core.term().heartbeatInterval());
          assertThat(s.term().selfFenceAfter()).isEqualTo(core.term().selfFenceAfter());
          assertThat(s.term().roundTripTimeout()).isEqualTo(core.term().roundTripTimeout());
          assertThat(s.term().bounds().sessionSettings())
              .isEqualTo(core.term().bounds().sessionSettings());
          assertThat(s.preferred()).isEqualTo(core.preferred()).isFalse();
          assertThat(s.takeoverDelay()).isEqualTo(core.takeoverDelay()).isZero();
          assertThat(new RetsuLockProperties.Leader().isAutoStartup()).isTrue();
        });
  }
}
