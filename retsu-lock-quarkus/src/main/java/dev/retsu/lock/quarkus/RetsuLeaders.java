package dev.retsu.lock.quarkus;

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
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The application's leaders, one per {@code retsu.lock.leaders.<name>}: built and started when the
 * application starts (after its data sources, before the first request), closed when it stops: each
 * leader's {@code @LeaderOnly} work stops and is awaited, then its lock is released. Inject it to
 * ask who leads or to reach a leader's term. Thread-safe.
 */
@Singleton
public class RetsuLeaders {

  private static final Logger LOG = LoggerFactory.getLogger(RetsuLeaders.class);

  private final RetsuLockConfig config;
  private final Event<Object> events;
  private final Instance<LoopObserver> observers;
  private volatile Map<String, RetsuLeader> leaders = Map.of();

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

  void start(@Observes @Priority(100) StartupEvent event) {
    if (!config.enabled()) {
      LOG.info("retsu.lock.enabled=false: no leader contends");
      return;
    }
    Map<String, RetsuLeader> built = new LinkedHashMap<>();
    for (Map.Entry<String, RetsuLockConfig.Leader> e : config.leaders().entrySet()) {
      built.put(e.getKey(), build(e.getKey(), e.getValue()));
    }
    LeaderOnlySites.check(built.keySet());
    leaders = Collections.unmodifiableMap(built);
    for (RetsuLeader l : built.values()) {
      for (LoopObserver o : observers) {
        o.started(l.name(), l.loop());
      }
      l.start();
    }
  }

  void stop(@Observes @Priority(100) ShutdownEvent event) {
    for (RetsuLeader l : leaders.values()) {
      l.close();
    }
    for (RetsuLeader l : leaders.values()) {
      for (LoopObserver o : observers) {
        o.stopped(l.name(), l.loop());
      }
    }
  }

  private RetsuLeader build(String name, RetsuLockConfig.Leader c) {
    String ds = c.datasource().orElse(DataSourceUtil.DEFAULT_DATASOURCE_NAME);
    AgroalDataSource dataSource =
        AgroalDataSourceUtil.dataSourceIfActive(ds)
            .orElseThrow(
                () ->
                    new IllegalStateException(
                        "retsu.lock.leaders."
                            + name
                            + ".datasource names the data source '"
                            + ds
                            + "', which is not configured or not active; active: "
                            + AgroalDataSourceUtil.activeDataSourceNames()));
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
