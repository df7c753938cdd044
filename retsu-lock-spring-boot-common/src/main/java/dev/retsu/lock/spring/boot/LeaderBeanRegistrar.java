package dev.retsu.lock.spring.boot;

import java.util.Map;
import java.util.Set;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.beans.factory.support.BeanDefinitionRegistryPostProcessor;
import org.springframework.beans.factory.support.RootBeanDefinition;
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
    for (String name : leaderNames(environment)) {
      register(registry, RetsuLeaders.BEAN_NAME_PREFIX + name, RetsuLeader.class, "get", name);
    }
    for (String name : groups(environment).keySet()) {
      register(
          registry,
          RetsuLeaders.GROUP_BEAN_NAME_PREFIX + name,
          RetsuLeaderGroup.class,
          "group",
          name);
    }
  }

  /**
   * A bean made by a factory method of the {@link RetsuLeaders} bean ({@code get(name)} or {@code
   * group(name)}), not by a callback: ahead-of-time processing writes such a definition as code,
   * which it cannot do for a callback. A definition that is there already (the one written ahead of
   * time) is kept.
   */
  private static void register(
      BeanDefinitionRegistry registry,
      String bean,
      Class<?> type,
      String factoryMethod,
      String name) {
    if (registry.containsBeanDefinition(bean)) {
      return;
    }
    RootBeanDefinition definition = new RootBeanDefinition();
    definition.setFactoryBeanName(RetsuLockAutoConfiguration.LEADERS_BEAN);
    definition.setFactoryMethodName(factoryMethod);
    definition.getConstructorArgumentValues().addIndexedArgumentValue(0, name);
    definition.setTargetType(type);
    definition.setRole(BeanDefinition.ROLE_INFRASTRUCTURE);
    definition.setDependsOn(RetsuLockAutoConfiguration.LEADERS_BEAN);
    definition.setLazyInit(false);
    registry.registerBeanDefinition(bean, definition);
  }
}
