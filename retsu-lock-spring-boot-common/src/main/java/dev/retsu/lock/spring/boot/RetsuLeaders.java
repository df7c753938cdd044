package dev.retsu.lock.spring.boot;

import dev.retsu.lock.FailoverTiming;
import dev.retsu.lock.LeaderGroup;
import dev.retsu.lock.LeaderGroupBuilder;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LeaderLoopBuilder;
import dev.retsu.lock.LeaderTask;
import dev.retsu.lock.LeaderWatch;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.spring.boot.RetsuLockProperties.TestMode;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.core.annotation.AnnotatedElementUtils;

/**
 * The named leaders and groups of this application context, built from {@code retsu.lock.leaders.*}
 * and {@code retsu.lock.groups.*} when the context starts: every value is checked then (core's
 * builder messages, "..., but was X"), so a bad value fails startup, not the first election. Each
 * leader is also a {@link RetsuLeader} bean ({@code retsuLeader.<name>}) and each group a {@link
 * RetsuLeaderGroup} bean ({@code retsuLeaderGroup.<name>}): the SmartLifecycles that run them.
 * Thread-safe.
 */
public final class RetsuLeaders implements DisposableBean, SmartInitializingSingleton {

  private static final Logger LOG = LoggerFactory.getLogger(RetsuLeaders.class);

  /** The prefix of every leader's bean name: {@code retsuLeader.<name>}. */
  public static final String BEAN_NAME_PREFIX = "retsuLeader.";

  /** The prefix of every group's bean name: {@code retsuLeaderGroup.<name>}. */
  public static final String GROUP_BEAN_NAME_PREFIX = "retsuLeaderGroup.";

  private final Map<String, RetsuLeader> leaders;
  private final Map<String, RetsuLeaderGroup> groups;
  private final List<Runnable> unbind = new ArrayList<>();
  private final Supplier<Set<Method>> leaderOnlyMethods;
  private final DataSource dataSource;
  private final LeaderChangeEvents changes;

  RetsuLeaders(
      RetsuLockProperties properties,
      DataSource dataSource,
      ListableBeanFactory beans,
      ApplicationEventPublisher events,
      List<TaskDecorator> decorators,
      Optional<MetricsBinder> metrics,
      Duration shutdownPhaseTimeout,
      Supplier<Set<Method>> leaderOnlyMethods) {
    this.leaderOnlyMethods = leaderOnlyMethods;
    this.dataSource = dataSource;
    this.changes = openWatch(properties, dataSource, events);
    Map<String, RetsuLeader> built = new LinkedHashMap<>();
    Map<String, RetsuLeaderGroup> builtGroups = new LinkedHashMap<>();
    try {
      buildAll(
          properties,
          dataSource,
          beans,
          events,
          decorators,
          metrics,
          shutdownPhaseTimeout,
          built,
          builtGroups);
    } catch (RuntimeException | Error e) {
      if (changes != null) {
        changes.close();
      }
      throw e;
    }
    this.leaders = Collections.unmodifiableMap(built);
    this.groups = Collections.unmodifiableMap(builtGroups);
    warnUnusedTasks(properties, beans);
  }

  private void buildAll(
      RetsuLockProperties properties,
      DataSource dataSource,
      ListableBeanFactory beans,
      ApplicationEventPublisher events,
      List<TaskDecorator> decorators,
      Optional<MetricsBinder> metrics,
      Duration shutdownPhaseTimeout,
      Map<String, RetsuLeader> built,
      Map<String, RetsuLeaderGroup> builtGroups) {
    for (Map.Entry<String, RetsuLockProperties.Leader> e : properties.getLeaders().entrySet()) {
      String name = e.getKey();
      RetsuLockProperties.Leader p = e.getValue();
      String prefix = "retsu.lock.leaders." + name;
      LockKey key = p.getKey().toLockKey(name);
      String candidate =
          p.getCandidateId() != null ? p.getCandidateId() : properties.getCandidateId();
      checkCloseTimeout(prefix, p.getCloseTimeout(), shutdownPhaseTimeout);
      Candidacy candidacy;
      if (p.getTestMode() == TestMode.OFF) {
        requireDataSource(prefix, dataSource);
        LeaderLoop loop =
            build(
                prefix,
                dataSource,
                key,
                candidate,
                p,
                properties.isPreferred(),
                changes == null ? null : changes.watch());
        candidate = loop.candidateId();
        candidacy = new LoopCandidacy(name, loop);
        metrics.ifPresent(m -> unbind.add(m.bindLoop(name, loop)));
      } else {
        candidate = candidate != null ? candidate : "test-" + name;
        candidacy =
            new TestModeCandidacy(
                name, key, candidate, p.getTestMode(), p.getRefreshInterval(), p.getCloseTimeout());
      }
      String taskBean = taskBean(prefix, name, p.getTask(), beans);
      JobObserver jobs = jobs(metrics, name, candidate);
      built.put(
          name,
          new RetsuLeader(
              name,
              p,
              key,
              candidate,
              candidacy,
              properties.getLifecyclePhase(),
              taskSource(name, taskBean, beans, decorators),
              taskBean,
              events,
              dataSource,
              jobs,
              changes));
    }
    for (Map.Entry<String, RetsuLockProperties.Group> e : properties.getGroups().entrySet()) {
      String name = e.getKey();
      RetsuLockProperties.Group p = e.getValue();
      String prefix = "retsu.lock.groups." + name;
      if (built.containsKey(name)) {
        throw new IllegalStateException(
            prefix + " has the name of a leader under retsu.lock.leaders; give each its own name");
      }
      checkCloseTimeout(prefix, p.getCloseTimeout(), shutdownPhaseTimeout);
      requireDataSource(prefix, dataSource);
      String candidate =
          p.getCandidateId() != null ? p.getCandidateId() : properties.getCandidateId();
      List<LockKey> keys;
      try {
        keys = p.toLockKeys(name);
      } catch (IllegalArgumentException ex) {
        throw new IllegalStateException(ex.getMessage(), ex);
      }
      Map<LockKey, String> keyNames = new LinkedHashMap<>();
      for (int i = 0; i < keys.size(); i++) {
        keyNames.put(
            keys.get(i), p.getPartitions() != null ? Integer.toString(i) : p.getKeys().get(i));
      }
      LeaderGroup group =
          buildGroup(
              prefix,
              dataSource,
              name,
              keys,
              candidate,
              p,
              changes == null ? null : changes.watch());
      metrics.ifPresent(m -> unbind.add(m.bindGroup(group, p.getPerKeyMetricsBudget())));
      String taskBean = taskBean(prefix, name, p.getTask(), beans);
      builtGroups.put(
          name,
          new RetsuLeaderGroup(
              name,
              p,
              group,
              keyNames,
              properties.getLifecyclePhase(),
              taskSource(name, taskBean, beans, decorators),
              taskBean,
              events,
              jobs(metrics, name, group.candidateId()),
              changes));
    }
  }

  /**
   * Opens the context's watch when {@code retsu.lock.watch.enabled} and there is a DataSource. Like
   * the leaders ({@code fail-fast=false}), a database that cannot be reached does not fail startup:
   * the watch opens its session every second until it is up, then reads every key.
   */
  private static LeaderChangeEvents openWatch(
      RetsuLockProperties properties, DataSource dataSource, ApplicationEventPublisher events) {
    if (!properties.getWatch().isEnabled()) {
      return null;
    }
    if (dataSource == null) {
      throw new IllegalStateException(
          "retsu.lock.watch.enabled=true needs a DataSource bean, but the context has none");
    }
    return new LeaderChangeEvents(LeaderWatch.builder(dataSource).failFast(false).open(), events);
  }

  /** The watch, or empty when {@code retsu.lock.watch.enabled} is false. */
  Optional<LeaderChangeEvents> changes() {
    return Optional.ofNullable(changes);
  }

  private JobObserver jobs(Optional<MetricsBinder> metrics, String lock, String candidate) {
    JobObserver jobs = metrics.map(m -> m.jobs(lock, candidate)).orElse(JobObserver.NO_OP);
    unbind.add(jobs::close);
    return jobs;
  }

  private static void requireDataSource(String prefix, DataSource dataSource) {
    if (dataSource == null) {
      throw new IllegalStateException(
          prefix
              + " needs a DataSource bean (or test-mode ALWAYS_LEADER or NEVER_LEADER), but the"
              + " context has none");
    }
  }

  private static void checkCloseTimeout(String prefix, Duration close, Duration phase) {
    if (close != null && phase != null && close.compareTo(phase) >= 0) {
      throw new IllegalStateException(
          prefix
              + ".close-timeout must be shorter than spring.lifecycle.timeout-per-shutdown-phase ("
              + phase
              + "), or Spring stops waiting before the lock is released, but was "
              + close);
    }
  }

  private void warnUnusedTasks(RetsuLockProperties properties, ListableBeanFactory beans) {
    for (String bean : beans.getBeanNamesForType(LeaderTask.class, false, false)) {
      boolean used =
          leaders.containsKey(bean)
              || groups.containsKey(bean)
              || properties.getLeaders().values().stream().anyMatch(p -> bean.equals(p.getTask()))
              || properties.getGroups().values().stream().anyMatch(p -> bean.equals(p.getTask()));
      if (!used) {
        LOG.warn(
            "LeaderTask bean '{}' is the task of no leader under retsu.lock.leaders {} and of no"
                + " group under retsu.lock.groups {}: name the bean like its leader, or set"
                + " retsu.lock.leaders.<name>.task",
            bean,
            leaders.keySet(),
            groups.keySet());
      }
    }
  }

  /** Every option through core's builder, which checks each one ("..., but was X"). */
  private static LeaderLoop build(
      String prefix,
      DataSource dataSource,
      LockKey key,
      String candidate,
      RetsuLockProperties.Leader p,
      boolean preferredByDefault,
      LeaderWatch watch) {
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
          .timing(timing(p))
          .failFast(p.isFailFast())
          .preferred(p.getPreferred() != null ? p.getPreferred() : preferredByDefault);
      if (p.getTakeoverDelay() != null) {
        b.takeoverDelay(p.getTakeoverDelay());
      }
      if (watch != null) {
        b.leaderWatch(watch); // its listeners (the foreign-holder gauge) hear changes
      }
      return b.build();
    } catch (RuntimeException e) {
      throw new IllegalStateException(prefix + ": " + e.getMessage(), e);
    }
  }

  /** The failover timing a leader's or group's properties give, one value for core. */
  private static FailoverTiming timing(RetsuLockProperties.Participant p) {
    return FailoverTiming.DEFAULT
        .withHeartbeatInterval(p.getHeartbeatInterval())
        .withSelfFenceAfter(p.getSelfFenceAfter())
        .withRoundTripTimeout(p.getRoundTripTimeout())
        .withServerIdleSessionTimeout(p.getServerIdleSessionTimeout())
        .withServerKeepalives(
            p.getServerKeepalives().getIdle(),
            p.getServerKeepalives().getInterval(),
            p.getServerKeepalives().getCount());
  }

  private static LeaderGroup buildGroup(
      String prefix,
      DataSource dataSource,
      String name,
      List<LockKey> keys,
      String candidate,
      RetsuLockProperties.Group p,
      LeaderWatch watch) {
    try {
      LeaderGroupBuilder b = LeaderGroup.builder(dataSource, name, keys);
      if (candidate != null) {
        b.candidateId(candidate);
      }
      if (watch != null) {
        b.leaderWatch(watch); // its listeners (the group's foreign-keys gauge) hear changes
      }
      return b.sessions(p.getSessions())
          .batchSize(p.getBatchSize())
          .refreshInterval(p.getRefreshInterval())
          .refreshTimeout(p.getRefreshTimeout())
          .timing(timing(p))
          .membershipInterval(p.getMembershipInterval())
          .reconnectInterval(p.getReconnectInterval())
          .closeTimeout(p.getCloseTimeout())
          .failFast(p.isFailFast())
          .build();
    } catch (RuntimeException e) {
      throw new IllegalStateException(prefix + ": " + e.getMessage(), e);
    }
  }

  /** The task's bean name, or null when there is none (the leader only holds leadership). */
  private static String taskBean(
      String prefix, String name, String taskBean, ListableBeanFactory beans) {
    if (taskBean != null
        && !(beans.containsBean(taskBean) && beans.isTypeMatch(taskBean, LeaderTask.class))) {
      throw new IllegalStateException(
          prefix + ".task must name a LeaderTask bean, but was '" + taskBean + "'");
    }
    if (taskBean != null) {
      return taskBean;
    }
    return beans.containsBean(name) && beans.isTypeMatch(name, LeaderTask.class) ? name : null;
  }

  private static Supplier<LeaderTask> taskSource(
      String name, String bean, ListableBeanFactory beans, List<TaskDecorator> decorators) {
    return () -> {
      LeaderTask task = bean != null ? beans.getBean(bean, LeaderTask.class) : ctx -> {};
      for (TaskDecorator d : decorators) {
        task = d.decorate(name, task);
      }
      return task;
    };
  }

  /** The DataSource the leaders and groups use, or null; for tests. */
  DataSource lockDataSource() {
    return dataSource;
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

  /**
   * Returns every group, by name, in the order configured.
   *
   * @return the groups
   */
  public Map<String, RetsuLeaderGroup> groups() {
    return groups;
  }

  /**
   * Returns a group.
   *
   * @param name its name under {@code retsu.lock.groups}
   * @return the group
   * @throws IllegalArgumentException if there is none of that name
   */
  public RetsuLeaderGroup group(String name) {
    RetsuLeaderGroup g = groups.get(name);
    if (g == null) {
      throw new IllegalArgumentException(
          "No group named '" + name + "' under retsu.lock.groups; known: " + groups.keySet());
    }
    return g;
  }

  /**
   * Returns the health of every leader and group, without I/O: {@code UP} while each takes part
   * (leading, or standing by for whatever reason, which the details say), {@code OUT_OF_SERVICE}
   * while one stops or after it stopped, {@code DOWN} when one will never lead again.
   *
   * @return the health
   */
  public RetsuLockHealth health() {
    return RetsuLockHealth.of(this);
  }

  /**
   * Once every singleton exists (before any leader starts): registers the job meters of every
   * {@code @LeaderOnly} method, so that standbys export them at zero from the start.
   */
  @Override
  public void afterSingletonsInstantiated() {
    for (Method m : leaderOnlyMethods.get()) {
      LeaderOnly a = AnnotatedElementUtils.findMergedAnnotation(m, LeaderOnly.class);
      if (a == null) {
        continue;
      }
      if (a.key().isEmpty()) {
        find(a.value()).ifPresent(l -> l.declareJob(m));
      } else if (groups.containsKey(a.value())) {
        groups.get(a.value()).declareJob(m);
      }
    }
  }

  /** Stops every leader and group still running (a context that failed), then unbinds metrics. */
  @Override
  public void destroy() {
    for (RetsuLeader l : leaders.values()) {
      l.destroy();
    }
    for (RetsuLeaderGroup g : groups.values()) {
      g.destroy();
    }
    if (changes != null) {
      changes.close();
    }
    for (Runnable r : unbind) {
      r.run();
    }
  }
}
