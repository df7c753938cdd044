package dev.retsu.lock.spring.boot;

import dev.retsu.lock.micrometer.LeaderMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.context.annotation.Bean;

/**
 * {@link LeaderMetrics} bound per leader (meters tagged {@code lock=<leader name>}) when
 * retsu-lock-micrometer is present and a {@link MeterRegistry} bean exists. Leaders in a test mode
 * have no loop and no meters.
 */
@AutoConfiguration(
    before = RetsuLockAutoConfiguration.class,
    afterName = {
      "org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
      "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration"
    })
@ConditionalOnClass({MeterRegistry.class, LeaderMetrics.class})
@ConditionalOnBean(MeterRegistry.class)
@ConditionalOnBooleanProperty(name = "retsu.lock.enabled", matchIfMissing = true)
public class RetsuLockMetricsAutoConfiguration {

  /** Creates the auto-configuration. */
  public RetsuLockMetricsAutoConfiguration() {}

  @Bean
  LoopBinder retsuLockLeaderMetrics(MeterRegistry registry) {
    return (leader, loop) -> {
      LeaderMetrics metrics = LeaderMetrics.builder(loop).lockName(leader).build();
      metrics.bindTo(registry);
      return metrics::close;
    };
  }
}
