package dev.retsu.lock.spring.boot;

import java.util.Map;
import java.util.Set;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.support.AbstractBeanDefinition;
import org.springframework.beans.factory.support.BeanDefinitionBuilder;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.beans.factory.support.BeanDefinitionRegistryPostProcessor;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.core.env.Environment;

/**
 * Registers one {@link RetsuLeader} bean per configured leader, {@code retsuLeader.<name>}, and one
 * {@link RetsuLeaderGroup} bean per group, {@code retsuLeaderGroup.<name>}, so that each is its own
 * SmartLifecycle. The instances come from the {@link RetsuLeaders} bean, which builds (and checks)
 * them all at once.
 */
final class LeaderBeanRegistrar implements BeanDefinitionRegistryPostProcessor {

  private final Environment environment;

  LeaderBeanRegistrar(Environment environment) {
    this.environment = environment;
  }

  static Set<String> leaderNames(Environment environment) {
    return Binder.get(environment)
        .bind("retsu.lock.leaders", Bindable.mapOf(String.class, RetsuLockProperties.Leader.class))
        .map(Map::keySet)
        .orElse(Set.of());
  }

  static Map<String, RetsuLockProperties.Group> groups(Environment environment) {
    return Binder.get(environment)
        .bind("retsu.lock.groups", Bindable.mapOf(String.class, RetsuLockProperties.Group.class))
        .orElse(Map.of());
  }

  @Override
  public void postProcessBeanDefinitionRegistry(BeanDefinitionRegistry registry) {
    BeanFactory factory = (BeanFactory) registry;
    for (String name : leaderNames(environment)) {
      register(
          registry,
          RetsuLeaders.BEAN_NAME_PREFIX + name,
          BeanDefinitionBuilder.genericBeanDefinition(
              RetsuLeader.class, () -> factory.getBean(RetsuLeaders.class).get(name)));
    }
    for (String name : groups(environment).keySet()) {
      register(
          registry,
          RetsuLeaders.GROUP_BEAN_NAME_PREFIX + name,
          BeanDefinitionBuilder.genericBeanDefinition(
              RetsuLeaderGroup.class, () -> factory.getBean(RetsuLeaders.class).group(name)));
    }
  }

  private static void register(
      BeanDefinitionRegistry registry, String bean, BeanDefinitionBuilder builder) {
    AbstractBeanDefinition definition =
        builder
            .setRole(BeanDefinition.ROLE_INFRASTRUCTURE)
            .addDependsOn(RetsuLockAutoConfiguration.LEADERS_BEAN)
            .getBeanDefinition();
    definition.setLazyInit(false);
    registry.registerBeanDefinition(bean, definition);
  }
}
