package dev.retsu.lock.spring.boot;

import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;

/**
 * Named leaders from {@code retsu.lock.leaders.*}: a {@link RetsuLeaders} bean, one {@link
 * RetsuLeader} SmartLifecycle bean per leader, and {@link LeaderOnly} methods. Off with {@code
 * retsu.lock.enabled=false}. The lock's DataSource is the bean named {@code retsuLockDataSource}
 * when there is one, else the application's (unique or primary) DataSource.
 */
@AutoConfiguration(
    afterName = "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration")
@ConditionalOnBooleanProperty(name = "retsu.lock.enabled", matchIfMissing = true)
@EnableConfigurationProperties(RetsuLockProperties.class)
public class RetsuLockAutoConfiguration {

  /** The name of the {@link RetsuLeaders} bean. */
  public static final String LEADERS_BEAN = "retsuLeaders";

  /** The name of a DataSource bean meant for the locks only; used when present. */
  public static final String DATA_SOURCE_BEAN = "retsuLockDataSource";

  /** Creates the auto-configuration. */
  public RetsuLockAutoConfiguration() {}

  @Bean
  static LeaderBeanRegistrar retsuLeaderBeanRegistrar(Environment environment) {
    return new LeaderBeanRegistrar(environment);
  }

  @Bean
  static LeaderOnlyBeanPostProcessor retsuLeaderOnlyBeanPostProcessor(Environment environment) {
    return new LeaderOnlyBeanPostProcessor(LeaderBeanRegistrar.leaderNames(environment));
  }

  @Bean(name = LEADERS_BEAN)
  @ConditionalOnMissingBean
  RetsuLeaders retsuLeaders(
      RetsuLockProperties properties,
      ObjectProvider<DataSource> dataSources,
      ListableBeanFactory beans,
      ApplicationEventPublisher events,
      ObjectProvider<TaskDecorator> decorators,
      ObjectProvider<LoopBinder> binders,
      Environment environment) {
    DataSource dataSource =
        beans.containsBean(DATA_SOURCE_BEAN)
            ? beans.getBean(DATA_SOURCE_BEAN, DataSource.class)
            : dataSources.getIfUnique();
    Duration phaseTimeout =
        Binder.get(environment)
            .bind("spring.lifecycle.timeout-per-shutdown-phase", Duration.class)
            .orElse(Duration.ofSeconds(30));
    return new RetsuLeaders(
        properties,
        dataSource,
        beans,
        events,
        List.copyOf(decorators.orderedStream().toList()),
        List.copyOf(binders.orderedStream().toList()),
        phaseTimeout);
  }
}
