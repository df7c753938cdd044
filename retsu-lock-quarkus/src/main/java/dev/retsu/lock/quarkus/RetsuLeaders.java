package dev.retsu.lock.quarkus;

import dev.retsu.lock.LeaderGroup;
import dev.retsu.lock.LeaderGroupBuilder;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LeaderLoopBuilder;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.quarkus.internal.LeaderOnlySites;
import dev.retsu.lock.quarkus.internal.LoopObserver;
import io.agroal.api.AgroalDataSource;
import io.quarkus.agroal.runtime.AgroalDataSourceUtil;
import io.quarkus.datasource.common.runtime.DataSourceUtil;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.annotation.Priority;
import jakarta.enterprise.event.Event;
import jakarta.enterprise.event.Observes;
import jakarta.enterprise.inject.Any;
import jakarta.enterprise.inject.Instance;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The application's leaders, one per {@code retsu.lock.leaders.<name>}, and groups, one per {@code
 * retsu.lock.groups.<name>}: built and started when the application starts (after its data sources,
 * before the first request), closed when it stops: each leader's {@code @LeaderOnly} work stops and
 * is awaited, then its lock is released. Inject it to ask who leads or to reach a leader's term.
 * Thread-safe.
 */
@Singleton
public class RetsuLeaders {

  private static final Logger LOG = LoggerFactory.getLogger(RetsuLeaders.class);

  private final RetsuLockConfig config;
  private final Event<Object> events;
  private final Instance<LoopObserver> observers;
  private volatile Map<String, RetsuLeader> leaders = Map.of();
  private volatile Map<String, RetsuLeaderGroup> groups = Map.of();

  @Inject
  RetsuLeaders(
      RetsuLockConfig config, Event<Object> events, @Any Instance<LoopObserver> observers) {
    this.config = config;
    this.events = events;
    this.observers = observers;
  }

  /**
   * Returns a leader by name.
   *
   * @param name its name under {@code retsu.lock.leaders}
   * @return the leader
   * @throws IllegalArgumentException when no leader has this name
   */
  public RetsuLeader leader(String name) {
    RetsuLeader l = leaders.get(name);
    if (l == null) {
      throw new IllegalArgumentException(
          "No leader named '"
              + name
              + "': retsu.lock.leaders has "
              + new TreeSet<>(leaders.keySet()));
    }
    return l;
  }

  /**
   * Returns every leader, by name.
   *
   * @return the leaders, unmodifiable; empty before start-up and with {@code
   *     retsu.lock.enabled=false}
   */
  public Map<String, RetsuLeader> all() {
    return leaders;
  }

  /**
   * Returns a leader by name, or empty.
   *
   * @param name its name
   * @return the leader, if there is one
   */
  public Optional<RetsuLeader> find(String name) {
    return Optional.ofNullable(leaders.get(name));
  }

  /**
   * Returns a group by name.
   *
   * @param name its name under {@code retsu.lock.groups}
   * @return the group
   * @throws IllegalArgumentException when no group has this name
   */
  public RetsuLeaderGroup group(String name) {
    RetsuLeaderGroup g = groups.get(name);
    if (g == null) {
      throw new IllegalArgumentException(
          "No group named '" + name + "': retsu.lock.groups has " + new TreeSet<>(groups.keySet()));
    }
    return g;
  }

  /**
   * Returns every group, by name.
   *
   * @return the groups, unmodifiable; empty before start-up and with {@code
   *     retsu.lock.enabled=false}
   */
  public Map<String, RetsuLeaderGroup> groups() {
    return groups;
  }

  /**
   * Returns a group by name, or empty.
   *
   * @param name its name
   * @return the group, if there is one
   */
  public Optional<RetsuLeaderGroup> findGroup(String name) {
    return Optional.ofNullable(groups.get(name));
  }

  void start(@Observes @Priority(100) StartupEvent event) {
    if (!config.enabled()) {
      LOG.info("retsu.lock.enabled=false: no leader contends");
      return;
    }
    Map<String, RetsuLeader> built = new LinkedHashMap<>();
    for (Map.Entry<String, RetsuLockConfig.Leader> e : config.leaders().entrySet()) {
      built.put(e.getKey(), build(e.getKey(), e.getValue()));
    }
    Set<String> both = new TreeSet<>(config.groups().keySet());
    both.retainAll(built.keySet());
    if (!both.isEmpty()) {
      throw new IllegalStateException(
          "retsu.lock.leaders and retsu.lock.groups both name "
              + both
              + ": a name is a leader or a group, so that @LeaderOnly and the leadership events"
              + " name one thing");
    }
    Map<String, List<String>> groupKeys = new LinkedHashMap<>();
    config.groups().forEach((name, g) -> groupKeys.put(name, g.keys()));
    LeaderOnlySites.check(built.keySet(), groupKeys);
    Map<String, RetsuLeaderGroup> builtGroups = new LinkedHashMap<>();
    for (Map.Entry<String, RetsuLockConfig.Group> e : config.groups().entrySet()) {
      builtGroups.put(e.getKey(), buildGroup(e.getKey(), e.getValue()));
    }
    leaders = Collections.unmodifiableMap(built);
    groups = Collections.unmodifiableMap(builtGroups);
    for (RetsuLeader l : built.values()) {
      for (LoopObserver o : observers) {
        o.started(l.name(), l.loop());
      }
      l.start();
    }
    for (RetsuLeaderGroup g : builtGroups.values()) {
      for (LoopObserver o : observers) {
        o.groupStarted(g.name(), g.group());
      }
      g.start();
    }
  }

  void stop(@Observes @Priority(100) ShutdownEvent event) {
    for (RetsuLeaderGroup g : groups.values()) {
      g.close(); // every key's work stops and is awaited, then the sessions end
      for (LoopObserver o : observers) {
        o.groupStopped(g.name(), g.group());
      }
    }
    for (RetsuLeader l : leaders.values()) {
      l.close();
    }
    for (RetsuLeader l : leaders.values()) {
      for (LoopObserver o : observers) {
        o.stopped(l.name(), l.loop());
      }
    }
  }

  private RetsuLeaderGroup buildGroup(String name, RetsuLockConfig.Group c) {
    String prefix = "retsu.lock.groups." + name;
    AgroalDataSource dataSource = dataSource(prefix, c.datasource());
    String namespace = c.namespace().orElse(name);
    Map<String, LockKey> keys = new LinkedHashMap<>();
    for (String k : c.keys()) {
      if (keys.put(k, LockKey.named(namespace, k)) != null) {
        throw new IllegalArgumentException(
            prefix + ".keys must be distinct, but names '" + k + "' twice: " + c.keys());
      }
    }
    LeaderGroupBuilder b =
        LeaderGroup.builder(dataSource, name, List.copyOf(keys.values()))
            .sessions(c.sessions())
            .refreshInterval(c.refreshInterval())
            .refreshTimeout(c.refreshTimeout())
            .membershipInterval(c.membershipInterval())
            .reconnectInterval(c.reconnectInterval())
            .closeTimeout(c.closeTimeout())
            .failFast(c.failFast());
    config.candidateId().ifPresent(b::candidateId);
    return new RetsuLeaderGroup(name, b.build(), keys, c.closeTimeout(), this::fire);
  }

  private static AgroalDataSource dataSource(String prefix, Optional<String> name) {
    String ds = name.orElse(DataSourceUtil.DEFAULT_DATASOURCE_NAME);
    return AgroalDataSourceUtil.dataSourceIfActive(ds)
        .orElseThrow(
            () ->
                new IllegalStateException(
                    prefix
                        + ".datasource names the data source '"
                        + ds
                        + "', which is not configured or not active; active: "
                        + AgroalDataSourceUtil.activeDataSourceNames()));
  }

  private RetsuLeader build(String name, RetsuLockConfig.Leader c) {
    AgroalDataSource dataSource = dataSource("retsu.lock.leaders." + name, c.datasource());
    LeaderLoopBuilder b =
        LeaderLoop.builder(dataSource, key(name, c.key()))
            .refreshInterval(c.refreshInterval())
            .refreshTimeout(c.refreshTimeout())
            .retryInterval(c.retryInterval())
            .retryJitter(c.retryJitter())
            .closeTimeout(c.closeTimeout())
            .failFast(c.failFast())
            .takeover(c.takeover())
            .failurePolicy(c.failurePolicy());
    config.candidateId().ifPresent(b::candidateId);
    return new RetsuLeader(name, b.build(), c.closeTimeout(), this::fire);
  }

  private void fire(Object event) {
    try {
      events.fire(event);
    } catch (RuntimeException e) {
      LOG.warn("An observer of {} threw; ignored", event, e);
    }
  }

  /** The key that {@code retsu.lock.leaders.<name>.key} names. */
  static LockKey key(String leader, RetsuLockConfig.Key k) {
    String prefix = "retsu.lock.leaders." + leader + ".key";
    boolean pair = k.first().isPresent() || k.second().isPresent();
    boolean named = k.namespace().isPresent() || k.name().isPresent();
    int forms = (pair ? 1 : 0) + (k.value().isPresent() ? 1 : 0) + (named ? 1 : 0);
    if (forms > 1) {
      throw new IllegalArgumentException(
          prefix + " must be one of first+second, value or namespace+name, but was " + describe(k));
    }
    if (pair) {
      if (k.first().isEmpty() || k.second().isEmpty()) {
        throw new IllegalArgumentException(
            prefix + " needs both first and second, but was " + describe(k));
      }
      return LockKey.of(k.first().getAsInt(), k.second().getAsInt());
    }
    if (k.value().isPresent()) {
      return LockKey.of(k.value().getAsLong());
    }
    if (named) {
      if (k.namespace().isEmpty() || k.name().isEmpty()) {
        throw new IllegalArgumentException(
            prefix + " needs both namespace and name, but was " + describe(k));
      }
      return LockKey.named(k.namespace().get(), k.name().get());
    }
    return LockKey.named(RetsuLockConfig.DEFAULT_NAMESPACE, leader);
  }

  private static String describe(RetsuLockConfig.Key k) {
    Map<String, Object> set = new LinkedHashMap<>();
    k.first().ifPresent(v -> set.put("first", v));
    k.second().ifPresent(v -> set.put("second", v));
    k.value().ifPresent(v -> set.put("value", v));
    k.namespace().ifPresent(v -> set.put("namespace", v));
    k.name().ifPresent(v -> set.put("name", v));
    return set.toString();
  }
}
