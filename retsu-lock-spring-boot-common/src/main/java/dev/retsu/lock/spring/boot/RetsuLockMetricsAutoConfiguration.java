package dev.retsu.lock.spring.boot;

import dev.retsu.lock.LeaderGroup;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.micrometer.LeaderGroupMetrics;
import dev.retsu.lock.micrometer.LeaderJobMetrics;
import dev.retsu.lock.micrometer.LeaderMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.context.annotation.Bean;

/**
 * Metrics when retsu-lock-micrometer is present and a {@link MeterRegistry} bean exists: {@link
 * LeaderMetrics} per database leader (tag {@code lock=<leader name>}), {@link LeaderGroupMetrics}
 * per group, and {@link LeaderJobMetrics} per leader and group: runs, failures and the last success
 * of its task and of each {@code @LeaderOnly} method (tag {@code job}), so that "the job ran on
 * exactly one replica" shows in the registry. Leaders in a test mode have no loop, hence no
 * leadership meters, but their jobs are counted.
 */
@AutoConfiguration(
    before = RetsuLockAutoConfiguration.class,
    afterName = {
      // Boot 4
      "org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
      "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
      // Boot 3
      "org.springframework.boot.actuate.autoconfigure.metrics.MetricsAutoConfiguration",
      "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration"
    })
@ConditionalOnClass({MeterRegistry.class, LeaderMetrics.class})
@ConditionalOnBean(MeterRegistry.class)
@ConditionalOnBooleanProperty(name = "retsu.lock.enabled", matchIfMissing = true)
public class RetsuLockMetricsAutoConfiguration {

  /** Creates the auto-configuration. */
  public RetsuLockMetricsAutoConfiguration() {}

  @Bean
  MetricsBinder retsuLockLeaderMetrics(MeterRegistry registry) {
    return new MetricsBinder() {
      @Override
      public Runnable bindLoop(String leader, LeaderLoop loop) {
        LeaderMetrics metrics = LeaderMetrics.builder(loop).lockName(leader).build();
        metrics.bindTo(registry);
        return metrics::close;
      }

      @Override
      public Runnable bindGroup(LeaderGroup group, int perKeyBudget) {
        LeaderGroupMetrics metrics =
            LeaderGroupMetrics.builder(group).perKeyBudget(perKeyBudget).build();
        metrics.bindTo(registry);
        return metrics::close;
      }

      @Override
      public JobObserver jobs(String lock, String candidate) {
        LeaderJobMetrics metrics = LeaderJobMetrics.builder(lock, candidate).build();
        metrics.bindTo(registry);
        return new JobObserver() {
          @Override
          public Job job(String name) {
            LeaderJobMetrics.Job job = metrics.job(name);
            return new Job() {
              @Override
              public void succeeded(long nanos) {
                job.succeeded(java.time.Duration.ofNanos(nanos));
              }

              @Override
              public void failed(long nanos, Throwable error) {
                job.failed(java.time.Duration.ofNanos(nanos), error);
              }
            };
          }

          @Override
          public void close() {
            metrics.close();
          }
        };
      }
    };
  }
}
