package dev.retsu.lock.spring.boot;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.aop.framework.autoproxy.AbstractBeanFactoryAwareAdvisingPostProcessor;
import org.springframework.aop.support.AopUtils;
import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;
import org.springframework.beans.factory.BeanCreationException;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.AnnotatedElementUtils;

/**
 * Proxies the beans that have {@link LeaderOnly} methods (the method, not the scheduler that calls
 * it), and checks each such method when the bean is created: it must name a configured leader, be
 * overridable and return void. Ordered before {@code @Scheduled} processing, so the scheduler calls
 * the proxy. With {@code retsu.lock.enabled=false} ({@link #skipping()}) no instance leads, so
 * every such method is skipped, as on a standby, and said once at WARN: never run unguarded on
 * every replica.
 */
final class LeaderOnlyBeanPostProcessor extends AbstractBeanFactoryAwareAdvisingPostProcessor {

  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(LeaderOnlyBeanPostProcessor.class);

  private final transient Set<String> leaderNames;
  private final transient Map<String, RetsuLockProperties.Group> groups;
  private final transient Map<Class<?>, Boolean> checked = new ConcurrentHashMap<>();
  private final transient Set<Method> declared = ConcurrentHashMap.newKeySet();
  private final transient Set<Method> skippedOnce = ConcurrentHashMap.newKeySet();
  private final boolean disabled;
  private transient BeanFactory beanFactory;

  LeaderOnlyBeanPostProcessor(
      Set<String> leaderNames, Map<String, RetsuLockProperties.Group> groups) {
    this(leaderNames, groups, false);
  }

  /**
   * The processor for {@code retsu.lock.enabled=false}: it checks that each method can be proxied,
   * and skips every call.
   *
   * @return the processor
   */
  static LeaderOnlyBeanPostProcessor skipping() {
    return new LeaderOnlyBeanPostProcessor(Set.of(), Map.of(), true);
  }

  private LeaderOnlyBeanPostProcessor(
      Set<String> leaderNames, Map<String, RetsuLockProperties.Group> groups, boolean disabled) {
    this.leaderNames = leaderNames;
    this.groups = groups;
    this.disabled = disabled;
    setProxyTargetClass(true);
    setBeforeExistingAdvisors(true);
    setOrder(Ordered.LOWEST_PRECEDENCE - 1);
    this.advisor =
        new DefaultPointcutAdvisor(
            new AnnotationMatchingPointcut(null, LeaderOnly.class, true), new Interceptor());
  }

  @Override
  public void setBeanFactory(BeanFactory beanFactory) {
    super.setBeanFactory(beanFactory);
    this.beanFactory = beanFactory;
  }

  @Override
  public Object postProcessAfterInitialization(Object bean, String beanName) {
    Class<?> type = AopUtils.getTargetClass(bean);
    checked.computeIfAbsent(type, t -> check(t, beanName));
    return super.postProcessAfterInitialization(bean, beanName);
  }

  private Boolean check(Class<?> type, String beanName) {
    Map<Method, LeaderOnly> methods =
        MethodIntrospector.selectMethods(
            type,
            (MethodIntrospector.MetadataLookup<LeaderOnly>)
                m -> AnnotatedElementUtils.findMergedAnnotation(m, LeaderOnly.class));
    for (Map.Entry<Method, LeaderOnly> e : methods.entrySet()) {
      Method m = e.getKey();
      LeaderOnly a = e.getValue();
      String where = "@LeaderOnly(\"" + a.value() + "\") on " + m;
      RetsuLockProperties.Group group = groups.get(a.value());
      // disabled, no leader is configured for real: only what the proxy itself needs is checked
      if (!disabled && group != null) {
        if (a.key().isEmpty() || group.keyNamed(a.value(), a.key()) == null) {
          throw new BeanCreationException(
              beanName,
              where
                  + " names the group '"
                  + a.value()
                  + "' and must name one of its keys ("
                  + (group.getPartitions() != null
                      ? "a partition 0.." + (group.getPartitions() - 1)
                      : "one of " + group.getKeys())
                  + "), but was key = '"
                  + a.key()
                  + "'");
        }
      } else if (!disabled && !leaderNames.contains(a.value())) {
        throw new BeanCreationException(
            beanName,
            where
                + " must name a leader under retsu.lock.leaders "
                + leaderNames
                + " or a group under retsu.lock.groups "
                + groups.keySet()
                + ", but was '"
                + a.value()
                + "'; to configure the leader '"
                + a.value()
                + "', set a property under retsu.lock.leaders."
                + a.value()
                + ", for example retsu.lock.leaders."
                + a.value()
                + ".refresh-interval=15s");
      } else if (!disabled && !a.key().isEmpty()) {
        throw new BeanCreationException(
            beanName,
            where
                + " names a leader, which has one key: key must be empty, but was '"
                + a.key()
                + "'");
      }
      int mod = m.getModifiers();
      if (Modifier.isPrivate(mod) || Modifier.isFinal(mod) || Modifier.isStatic(mod)) {
        throw new BeanCreationException(
            beanName,
            where
                + " must be an overridable instance method (the proxy runs it), but was "
                + Modifier.toString(mod));
      }
      if (m.getReturnType() != void.class) {
        throw new BeanCreationException(
            beanName,
            where
                + " must return void (a standby does not run it), but was "
                + m.getReturnType().getName());
      }
      declared.add(m);
    }
    return Boolean.TRUE;
  }

  /** Every {@code @LeaderOnly} method of the beans created so far, for their job meters. */
  Set<Method> declared() {
    return declared;
  }

  /** Runs the method only while this instance leads; on the leader, with the term bound. */
  private final class Interceptor implements MethodInterceptor {

    private volatile RetsuLeaders leaders;

    @Override
    public Object invoke(MethodInvocation invocation) throws Throwable {
      LeaderOnly a =
          AnnotatedElementUtils.findMergedAnnotation(invocation.getMethod(), LeaderOnly.class);
      if (a == null) {
        return invocation.proceed();
      }
      if (disabled) {
        if (skippedOnce.add(invocation.getMethod())) {
          LOG.warn(
              "retsu.lock.enabled=false: no instance leads, so @LeaderOnly(\"{}\") {} is skipped"
                  + " on every call here (said once per method)",
              a.value(),
              invocation.getMethod());
        }
        return null;
      }
      RetsuLeaders all = leaders;
      if (all == null) {
        all = beanFactory.getBean(RetsuLeaders.class);
        leaders = all;
      }
      if (!a.key().isEmpty()) {
        return all.group(a.value()).invokeAsLeader(a.key(), invocation);
      }
      return all.get(a.value()).invokeAsLeader(invocation);
    }
  }
}
