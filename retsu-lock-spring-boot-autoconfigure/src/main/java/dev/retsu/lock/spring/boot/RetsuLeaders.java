package dev.retsu.lock.spring.boot;

import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LeaderLoopBuilder;
import dev.retsu.lock.LeaderTask;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.spring.boot.RetsuLockProperties.TestMode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.context.ApplicationEventPublisher;

/**
 * The named leaders of this application context, built from {@code retsu.lock.leaders.*} when the
 * context starts: every value is checked then (core's builder messages, "..., but was X"), so a bad
 * value fails startup, not the first election. Each leader is also a {@link RetsuLeader} bean
 * ({@code retsuLeader.<name>}), the SmartLifecycle that runs it. Thread-safe.
 */
public final class RetsuLeaders implements DisposableBean {

  private static final Logger LOG = LoggerFactory.getLogger(RetsuLeaders.class);

  /** The prefix of every leader's bean name: {@code retsuLeader.<name>}. */
  public static final String BEAN_NAME_PREFIX = "retsuLeader.";

  private final Map<String, RetsuLeader> leaders;
  private final List<Runnable> unbind = new ArrayList<>();

  RetsuLeaders(
      RetsuLockProperties properties,
      DataSource dataSource,
      ListableBeanFactory beans,
      ApplicationEventPublisher events,
      List<TaskDecorator> decorators,
      List<LoopBinder> binders,
      Duration shutdownPhaseTimeout) {
    Map<String, RetsuLeader> built = new LinkedHashMap<>();
    for (Map.Entry<String, RetsuLockProperties.Leader> e : properties.getLeaders().entrySet()) {
      String name = e.getKey();
      RetsuLockProperties.Leader p = e.getValue();
      String prefix = "retsu.lock.leaders." + name;
      LockKey key = p.getKey().toLockKey(name);
      String candidate =
          p.getCandidateId() != null ? p.getCandidateId() : properties.getCandidateId();
      if (p.getCloseTimeout() != null
          && shutdownPhaseTimeout != null
          && p.getCloseTimeout().compareTo(shutdownPhaseTimeout) >= 0) {
        throw new IllegalStateException(
            prefix
                + ".close-timeout must be shorter than spring.lifecycle.timeout-per-shutdown-phase ("
                + shutdownPhaseTimeout
                + "), or Spring stops waiting before the lock is released, but was "
                + p.getCloseTimeout());
      }
      LeaderLoop loop = null;
      if (p.getTestMode() == TestMode.OFF) {
        if (dataSource == null) {
          throw new IllegalStateException(
              prefix
                  + " needs a DataSource bean (or test-mode ALWAYS_LEADER or NEVER_LEADER), but the"
                  + " context has none");
        }
        loop = build(prefix, dataSource, key, candidate, p);
        candidate = loop.candidateId();
      } else if (candidate == null) {
        candidate = "test-" + name;
      }
      Supplier<LeaderTask> task = taskSource(prefix, name, p.getTask(), beans, decorators);
      RetsuLeader leader =
          new RetsuLeader(
              name,
              p,
              key,
              candidate,
              loop,
              properties.getLifecyclePhase(),
              task,
              events,
              dataSource);
      built.put(name, leader);
      if (loop != null) {
        for (LoopBinder binder : binders) {
          unbind.add(binder.bind(name, loop));
        }
      }
    }
    this.leaders = Collections.unmodifiableMap(built);
    for (String bean : beans.getBeanNamesForType(LeaderTask.class, false, false)) {
      boolean used =
          leaders.containsKey(bean)
              || properties.getLeaders().values().stream().anyMatch(p -> bean.equals(p.getTask()));
      if (!used) {
        LOG.warn(
            "LeaderTask bean '{}' is the task of no leader under retsu.lock.leaders {}: name the"
                + " bean like its leader, or set retsu.lock.leaders.<name>.task",
            bean,
            leaders.keySet());
      }
    }
  }

  /** Every option through core's builder, which checks each one ("..., but was X"). */
  private static LeaderLoop build(
      String prefix,
      DataSource dataSource,
      LockKey key,
      String candidate,
      RetsuLockProperties.Leader p) {
    LeaderLoopBuilder b = LeaderLoop.builder(dataSource, key);
    try {
      if (candidate != null) {
        b.candidateId(candidate);
      }
      b.takeover(p.getTakeover())
          .retryInterval(p.getRetryInterval())
          .retryJitter(p.getRetryJitter())
          .refreshInterval(p.getRefreshInterval())
          .refreshTimeout(p.getRefreshTimeout())
          .failurePolicy(p.getFailurePolicy())
          .maxBackoff(p.getMaxBackoff())
          .closeTimeout(p.getCloseTimeout())
          .waitTimeout(p.getWaitTimeout())
          .heartbeatInterval(p.getHeartbeatInterval())
          .selfFenceAfter(p.getSelfFenceAfter())
          .roundTripTimeout(p.getRoundTripTimeout())
          .serverIdleSessionTimeout(p.getServerIdleSessionTimeout())
          .serverKeepalives(
              p.getServerKeepalives().getIdle(),
              p.getServerKeepalives().getInterval(),
              p.getServerKeepalives().getCount());
      return b.build();
    } catch (RuntimeException e) {
      throw new IllegalStateException(prefix + ": " + e.getMessage(), e);
    }
  }

  private static Supplier<LeaderTask> taskSource(
      String prefix,
      String name,
      String taskBean,
      ListableBeanFactory beans,
      List<TaskDecorator> decorators) {
    if (taskBean != null
        && !(beans.containsBean(taskBean) && beans.isTypeMatch(taskBean, LeaderTask.class))) {
      throw new IllegalStateException(
          prefix + ".task must name a LeaderTask bean, but was '" + taskBean + "'");
    }
    String bean = taskBean != null ? taskBean : name;
    boolean present =
        taskBean != null || (beans.containsBean(bean) && beans.isTypeMatch(bean, LeaderTask.class));
    return () -> {
      LeaderTask task = present ? beans.getBean(bean, LeaderTask.class) : ctx -> {};
      for (TaskDecorator d : decorators) {
        task = d.decorate(name, task);
      }
      return task;
    };
  }

  /**
   * Returns every leader, by name, in the order configured.
   *
   * @return the leaders
   */
  public Map<String, RetsuLeader> all() {
    return leaders;
  }

  /**
   * Returns a leader.
   *
   * @param name its name under {@code retsu.lock.leaders}
   * @return the leader
   * @throws IllegalArgumentException if there is none of that name
   */
  public RetsuLeader get(String name) {
    RetsuLeader l = leaders.get(name);
    if (l == null) {
      throw new IllegalArgumentException(
          "No leader named '" + name + "' under retsu.lock.leaders; known: " + leaders.keySet());
    }
    return l;
  }

  /**
   * Returns a leader, if there is one of that name.
   *
   * @param name its name
   * @return the leader, or empty
   */
  public Optional<RetsuLeader> find(String name) {
    return Optional.ofNullable(leaders.get(name));
  }

  /** Stops every leader still running (a context that failed to start), then unbinds metrics. */
  @Override
  public void destroy() {
    for (RetsuLeader l : leaders.values()) {
      l.destroy();
    }
    for (Runnable r : unbind) {
      r.run();
    }
  }
}
