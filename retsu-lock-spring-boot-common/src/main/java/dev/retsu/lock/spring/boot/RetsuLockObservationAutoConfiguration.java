package dev.retsu.lock.spring.boot;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.context.annotation.Bean;

/**
 * One {@link Observation} {@code retsu.lock.task} per refresh (per run of a leader's task) when an
 * {@link ObservationRegistry} bean exists, with one low-cardinality key, {@code retsu.lock.leader}
 * (the leader's name), and no high-cardinality keys. With Boot's default handlers it becomes the
 * timer {@code retsu.lock.task} and a span.
 */
@AutoConfiguration(
    before = RetsuLockAutoConfiguration.class,
    afterName = {
      "org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration",
      "org.springframework.boot.actuate.autoconfigure.observation.ObservationAutoConfiguration"
    })
@ConditionalOnClass(ObservationRegistry.class)
@ConditionalOnBean(ObservationRegistry.class)
@ConditionalOnBooleanProperty(name = "retsu.lock.enabled", matchIfMissing = true)
public class RetsuLockObservationAutoConfiguration {

  /** The observation per refresh. */
  public static final String OBSERVATION_NAME = "retsu.lock.task";

  /** Its one (low-cardinality) key: the leader's name. */
  public static final String LEADER_KEY = "retsu.lock.leader";

  /** Creates the auto-configuration. */
  public RetsuLockObservationAutoConfiguration() {}

  @Bean
  TaskDecorator retsuLockTaskObservation(ObservationRegistry registry) {
    return (leader, task) ->
        ctx ->
            Observation.createNotStarted(OBSERVATION_NAME, registry)
                .contextualName("retsu-lock task " + leader)
                .lowCardinalityKeyValue(LEADER_KEY, leader)
                .observeChecked(() -> task.refresh(ctx));
  }
}
