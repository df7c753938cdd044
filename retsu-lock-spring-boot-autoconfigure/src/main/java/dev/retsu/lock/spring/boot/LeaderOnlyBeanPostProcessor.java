package dev.retsu.lock.spring.boot;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
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
 * the proxy.
 */
final class LeaderOnlyBeanPostProcessor extends AbstractBeanFactoryAwareAdvisingPostProcessor {

  private static final long serialVersionUID = 1L;

  private final transient Set<String> leaderNames;
  private final transient Map<Class<?>, Boolean> checked = new ConcurrentHashMap<>();
  private transient BeanFactory beanFactory;

  LeaderOnlyBeanPostProcessor(Set<String> leaderNames) {
    this.leaderNames = leaderNames;
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
      String where = "@LeaderOnly(\"" + e.getValue().value() + "\") on " + m;
      if (!leaderNames.contains(e.getValue().value())) {
        throw new BeanCreationException(
            beanName,
            where
                + " must name a leader under retsu.lock.leaders "
                + leaderNames
                + ", but was '"
                + e.getValue().value()
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
    }
    return Boolean.TRUE;
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
      RetsuLeaders all = leaders;
      if (all == null) {
        all = beanFactory.getBean(RetsuLeaders.class);
        leaders = all;
      }
      return all.get(a.value()).invokeAsLeader(invocation);
    }
  }
}
