package dev.retsu.lock.quarkus.internal;

import dev.retsu.lock.LeaderGroup;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.micrometer.LeaderGroupMetrics;
import dev.retsu.lock.micrometer.LeaderMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Each leader's meters (retsu-lock-micrometer's {@link LeaderMetrics}, tagged with the leader's
 * name) and each group's ({@link LeaderGroupMetrics}, tagged with the group's name) in Quarkus's
 * meter registry; registered when the application has Micrometer.
 */
@Singleton
public class LeaderMeters implements LoopObserver {

  private final MeterRegistry registry;
  private final Map<String, LeaderMetrics> bound = new ConcurrentHashMap<>();
  private final Map<String, LeaderGroupMetrics> groups = new ConcurrentHashMap<>();

  @Inject
  LeaderMeters(MeterRegistry registry) {
    this.registry = registry;
  }

  @Override
  public void started(String name, LeaderLoop loop) {
    LeaderMetrics m = LeaderMetrics.builder(loop).lockName(name).build();
    m.bindTo(registry);
    bound.put(name, m);
  }

  @Override
  public void stopped(String name, LeaderLoop loop) {
    LeaderMetrics m = bound.remove(name);
    if (m != null) {
      m.close();
    }
  }

  @Override
  public void groupStarted(String name, LeaderGroup group) {
    LeaderGroupMetrics m = LeaderGroupMetrics.of(group);
    m.bindTo(registry);
    groups.put(name, m);
  }

  @Override
  public void groupStopped(String name, LeaderGroup group) {
    LeaderGroupMetrics m = groups.remove(name);
    if (m != null) {
      m.close();
    }
  }
}
