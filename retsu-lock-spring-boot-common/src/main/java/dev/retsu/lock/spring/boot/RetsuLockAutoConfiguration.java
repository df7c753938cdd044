package dev.retsu.lock.spring.boot;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
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
import org.springframework.context.annotation.ImportRuntimeHints;
import org.springframework.core.env.Environment;

/**
 * Named leaders from {@code retsu.lock.leaders.*} and groups from {@code retsu.lock.groups.*}: a
 * {@link RetsuLeaders} bean, one {@link RetsuLeader} / {@link RetsuLeaderGroup} SmartLifecycle bean
 * each, and {@link LeaderOnly} methods. Off with {@code retsu.lock.enabled=false}. The locks'
 * DataSource is the one marked {@link RetsuLockDataSource}, else the bean named {@code
 * retsuLockDataSource}, else the application's (unique or primary) DataSource. Registered by each
 * Spring Boot line's module, after that line's DataSource auto-configuration.
 */
@AutoConfiguration(
    afterName = {
      "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration", // Boot 4
      "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration" // Boot 3
    })
@ConditionalOnBooleanProperty(name = "retsu.lock.enabled", matchIfMissing = true)
@EnableConfigurationProperties(RetsuLockProperties.class)
@ImportRuntimeHints(RetsuLockRuntimeHints.class)
public class RetsuLockAutoConfiguration {

  /** The name of the {@link RetsuLeaders} bean. */
  public static final String LEADERS_BEAN = "retsuLeaders";

  /**
   * The name of a DataSource bean meant for the locks only; used when no DataSource is marked
   * {@link RetsuLockDataSource}.
   */
  public static final String DATA_SOURCE_BEAN = "retsuLockDataSource";

  /** Creates the auto-configuration. */
  public RetsuLockAutoConfiguration() {}

  @Bean
  static LeaderBeanRegistrar retsuLeaderBeanRegistrar(Environment environment) {
    return new LeaderBeanRegistrar(environment);
  }

  @Bean
  static LeaderOnlyBeanPostProcessor retsuLeaderOnlyBeanPostProcessor(Environment environment) {
    return new LeaderOnlyBeanPostProcessor(
        LeaderBeanRegistrar.leaderNames(environment), LeaderBeanRegistrar.groups(environment));
  }

  @Bean(name = LEADERS_BEAN)
  @ConditionalOnMissingBean
  RetsuLeaders retsuLeaders(
      RetsuLockProperties properties,
      ObjectProvider<DataSource> dataSources,
      ListableBeanFactory beans,
      ApplicationEventPublisher events,
      ObjectProvider<TaskDecorator> decorators,
      ObjectProvider<MetricsBinder> metrics,
      ObjectProvider<LeaderOnlyBeanPostProcessor> leaderOnly,
      Environment environment) {
    Duration phaseTimeout =
        Binder.get(environment)
            .bind("spring.lifecycle.timeout-per-shutdown-phase", Duration.class)
            .orElse(Duration.ofSeconds(30));
    return new RetsuLeaders(
        properties,
        lockDataSource(dataSources, beans),
        beans,
        events,
        List.copyOf(decorators.orderedStream().toList()),
        Optional.ofNullable(metrics.getIfAvailable()),
        phaseTimeout,
        () -> {
          LeaderOnlyBeanPostProcessor p = leaderOnly.getIfAvailable();
          return p == null ? java.util.Set.of() : p.declared();
        });
  }

  /**
   * Whether a bean carries {@link RetsuLockDataSource}: on its class, or on the {@code @Bean}
   * method that makes it (read from the bean definition's metadata, which Spring Framework 6.2's
   * {@code findAnnotationOnBean} does not consult before the factory method has been resolved).
   */
  private static boolean isMarked(ListableBeanFactory beans, String name) {
    if (beans.findAnnotationOnBean(name, RetsuLockDataSource.class) != null) {
      return true;
    }
    if (beans instanceof org.springframework.beans.factory.config.ConfigurableListableBeanFactory f
        && f.containsBeanDefinition(name)
        && f.getBeanDefinition(name)
            instanceof org.springframework.beans.factory.annotation.AnnotatedBeanDefinition a) {
      var method = a.getFactoryMethodMetadata();
      return method != null && method.isAnnotated(RetsuLockDataSource.class.getName());
    }
    return false;
  }

  /**
   * The DataSource marked {@link RetsuLockDataSource} (found by the annotation on its bean method
   * or class, the same on every Spring line), else the bean named {@value #DATA_SOURCE_BEAN}, else
   * the unique or primary one.
   */
  private static DataSource lockDataSource(
      ObjectProvider<DataSource> dataSources, ListableBeanFactory beans) {
    List<String> marked = new java.util.ArrayList<>();
    for (String name : beans.getBeanNamesForType(DataSource.class, true, false)) {
      if (isMarked(beans, name)) {
        marked.add(name);
      }
    }
    if (marked.size() > 1) {
      throw new IllegalStateException(
          "More than one DataSource bean is marked @RetsuLockDataSource, but the locks need"
              + " exactly one: "
              + marked);
    }
    if (marked.size() == 1) {
      return beans.getBean(marked.get(0), DataSource.class);
    }
    return beans.containsBean(DATA_SOURCE_BEAN)
        ? beans.getBean(DATA_SOURCE_BEAN, DataSource.class)
        : dataSources.getIfUnique();
  }
}
