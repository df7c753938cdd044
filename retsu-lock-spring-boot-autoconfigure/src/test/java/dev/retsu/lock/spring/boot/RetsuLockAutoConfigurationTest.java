package dev.retsu.lock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.LeaderTask;
import dev.retsu.lock.LossReason;
import io.micrometer.common.KeyValue;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;
import org.springframework.boot.LazyInitializationBeanFactoryPostProcessor;
import org.springframework.boot.actuate.info.Info;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ApplicationEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.integration.leader.event.AbstractLeaderEvent;
import org.springframework.integration.leader.event.OnGrantedEvent;
import org.springframework.integration.leader.event.OnRevokedEvent;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;

/**
 * Every condition and the behaviour that needs no database, through {@link
 * ApplicationContextRunner}: leaders in test mode, the SmartLifecycle, {@code @LeaderOnly}, events,
 * health, info, endpoint, metrics, observations, and startup failures with core's messages.
 */
class RetsuLockAutoConfigurationTest {

  private final ApplicationContextRunner runner =
      new ApplicationContextRunner()
          .withConfiguration(
              AutoConfigurations.of(
                  RetsuLockAutoConfiguration.class,
                  RetsuLockHealthAutoConfiguration.class,
                  RetsuLockInfoAutoConfiguration.class,
                  RetsuLockEndpointAutoConfiguration.class,
                  RetsuLockMetricsAutoConfiguration.class,
                  RetsuLockObservationAutoConfiguration.class,
                  RetsuLockIntegrationAutoConfiguration.class))
          .withPropertyValues("management.endpoints.web.exposure.include=health,info,leaders");

  /** A DataSource that is never connected to: its leaders do not start. */
  private final ApplicationContextRunner withIdleDataSource =
      runner.withBean(DataSource.class, PGSimpleDataSource::new);

  @Test
  void disabledLeavesNothingOfRetsuLockInTheContext() {
    withIdleDataSource
        .withPropertyValues(
            "retsu.lock.enabled=false", "retsu.lock.leaders.job.test-mode=always-leader")
        .run(
            context -> {
              assertThat(context).hasNotFailed();
              assertThat(context).doesNotHaveBean(RetsuLeaders.class);
              assertThat(context).doesNotHaveBean(RetsuLeader.class);
              assertThat(context).doesNotHaveBean(RetsuLockHealthIndicator.class);
              assertThat(context).doesNotHaveBean(LeadersEndpoint.class);
            });
  }

  @Test
  void noLeadersConfiguredMeansNoLeaderBeansAndNoDataSourceNeeded() {
    runner.run(
        context -> {
          assertThat(context).hasSingleBean(RetsuLeaders.class);
          assertThat(context).doesNotHaveBean(RetsuLeader.class);
          assertThat(context.getBean(RetsuLeaders.class).all()).isEmpty();
        });
  }

  @Test
  void aDatabaseLeaderWithoutADataSourceFailsStartup() {
    runner
        .withPropertyValues("retsu.lock.leaders.job.refresh-interval=1s")
        .run(
            context ->
                assertThat(context)
                    .getFailure()
                    .rootCause()
                    .hasMessageContaining("retsu.lock.leaders.job needs a DataSource bean"));
  }

  @Test
  void oneSmartLifecycleBeanPerLeaderNotStartedBeforeTheRefresh() {
    withIdleDataSource
        .withPropertyValues(
            "retsu.lock.leaders.a.auto-startup=false",
            "retsu.lock.leaders.b.auto-startup=false",
            "retsu.lock.lifecycle-phase=42")
        .run(
            context -> {
              assertThat(context.getBeansOfType(RetsuLeader.class))
                  .containsOnlyKeys("retsuLeader.a", "retsuLeader.b");
              RetsuLeader a = context.getBean("retsuLeader.a", RetsuLeader.class);
              assertThat(a.getPhase()).isEqualTo(42);
              assertThat(a.isAutoStartup()).isFalse();
              assertThat(a.isRunning()).isFalse();
              assertThat(a.status()).isEqualTo("not-started");
              assertThat(a.loop().orElseThrow().state().name()).isEqualTo("NEW");
            });
  }

  @Test
  void invalidValuesFailStartupWithCoresMessages() {
    expectFailure(
        "retsu.lock.leaders.job.retry-interval=-1s",
        "retryInterval must be positive, but was PT-1S");
    expectFailure("retsu.lock.leaders.job.retry-jitter=1.5", "retryJitter");
    expectFailure(
        "retsu.lock.leaders.job.refresh-interval=0s",
        "refreshInterval must be positive, but was PT0S");
    expectFailure(
        "retsu.lock.leaders.job.refresh-timeout=-2s",
        "refreshTimeout must be positive, but was PT-2S");
    expectFailure(
        "retsu.lock.leaders.job.max-backoff=0s", "maxBackoff must be positive, but was PT0S");
    expectFailure(
        "retsu.lock.leaders.job.close-timeout=0s", "closeTimeout must be positive, but was PT0S");
    expectFailure("retsu.lock.leaders.job.wait-timeout=1ms", "waitTimeout");
    expectFailure(
        "retsu.lock.leaders.job.heartbeat-interval=0s",
        "heartbeatInterval must be positive, but was PT0S");
    expectFailure(
        "retsu.lock.leaders.job.self-fence-after=20s",
        "selfFenceAfter must be at least PT1S shorter");
    expectFailure(
        "retsu.lock.leaders.job.round-trip-timeout=0s",
        "roundTripTimeout must be positive, but was PT0S");
    expectFailure("retsu.lock.leaders.job.server-idle-session-timeout=500ms", "idleSessionTimeout");
    expectFailure("retsu.lock.leaders.job.server-keepalives.idle=1500ms", "keepaliveIdle");
    expectFailure("retsu.lock.leaders.job.server-keepalives.count=0", "keepaliveCount");
    expectFailure("retsu.lock.leaders.job.candidate-id=", "candidateId");
    expectFailure(
        "retsu.lock.leaders.job.key.value=1",
        "retsu.lock.leaders.job.key must be one of first+second, value or namespace+name, but was"
            + " {first=1, value=1}",
        "retsu.lock.leaders.job.key.first=1");
    expectFailure(
        "retsu.lock.leaders.job.key.first=1",
        "retsu.lock.leaders.job.key needs both first and second, but was {first=1}");
    expectFailure(
        "retsu.lock.leaders.job.key.name=x",
        "retsu.lock.leaders.job.key needs both namespace and name, but was {name=x}");
    expectFailure(
        "retsu.lock.leaders.job.close-timeout=40s",
        "retsu.lock.leaders.job.close-timeout must be shorter than"
            + " spring.lifecycle.timeout-per-shutdown-phase (PT30S)");
    expectFailure(
        "retsu.lock.leaders.job.task=nothing",
        "task must name a LeaderTask bean, but was 'nothing'");
    expectFailure("retsu.lock.leaders.job.takeover=sometimes", "takeover");
  }

  private void expectFailure(String property, String message, String... more) {
    withIdleDataSource
        .withPropertyValues("retsu.lock.leaders.job.auto-startup=false", property)
        .withPropertyValues(more)
        .run(
            context ->
                assertThat(context)
                    .as(property)
                    .getFailure()
                    .satisfies(
                        failure ->
                            assertThat(allMessages(failure)).as(property).contains(message)));
  }

  private static String allMessages(Throwable t) {
    StringBuilder b = new StringBuilder();
    for (Throwable e = t; e != null; e = e.getCause()) {
      b.append(e.getMessage()).append('\n');
    }
    return b.toString();
  }

  @Test
  void alwaysLeaderRunsItsTaskAndLeaderOnlyMethodsWithoutADatabase() {
    runner
        .withUserConfiguration(Work.class)
        .withPropertyValues(
            "retsu.lock.leaders.job.test-mode=always-leader",
            "retsu.lock.leaders.job.refresh-interval=50ms")
        .run(
            context -> {
              Work work = context.getBean(Work.class);
              RetsuLeader leader = context.getBean(RetsuLeaders.class).get("job");
              await().atMost(Duration.ofSeconds(5)).until(() -> work.refreshes.get() >= 2);
              await().atMost(Duration.ofSeconds(5)).until(() -> work.scheduled.get() >= 2);
              assertThat(leader.isLeader()).isTrue();
              assertThat(leader.status()).isEqualTo("leader");
              assertThat(work.taskThreads).allMatch(n -> n.equals("retsu-lock-test-leader-job"));
              Health health = context.getBean(RetsuLockHealthIndicator.class).health();
              assertThat(health.getStatus()).isEqualTo(Status.UP);
              assertThat(details(health, "job"))
                  .containsEntry("role", "leader")
                  .containsEntry("testMode", "ALWAYS_LEADER")
                  .containsEntry("term", 1L)
                  .containsKeys("fencingToken", "holder", "lastRefreshAge");
              assertThat(work.events).first().isInstanceOf(LeadershipGrantedEvent.class);
            });
  }

  @Test
  void neverLeaderRunsNothingAndIsUp() {
    runner
        .withUserConfiguration(Work.class)
        .withPropertyValues(
            "retsu.lock.leaders.job.test-mode=never-leader",
            "retsu.lock.leaders.job.refresh-interval=50ms")
        .run(
            context -> {
              Work work = context.getBean(Work.class);
              await()
                  .during(Duration.ofMillis(400))
                  .atMost(Duration.ofSeconds(2))
                  .until(() -> work.scheduled.get() == 0 && work.refreshes.get() == 0);
              assertThat(work.skippedCalls.get()).isPositive(); // the scheduler called the proxy
              RetsuLeader leader = context.getBean(RetsuLeaders.class).get("job");
              assertThat(leader.isLeader()).isFalse();
              Health health = context.getBean(RetsuLockHealthIndicator.class).health();
              assertThat(health.getStatus()).isEqualTo(Status.UP);
              assertThat(details(health, "job")).containsEntry("role", "standby");
              assertThat(context.getBean(LeadersEndpoint.class).leader("job"))
                  .containsEntry("holder", null);
              assertThat(work.events).isEmpty();
            });
  }

  @Test
  void stopRevokesAfterTheWorkStoppedAndHealthGoesOutOfService() {
    List<ApplicationEvent> events = new CopyOnWriteArrayList<>();
    ConfigurableApplicationContext[] keep = new ConfigurableApplicationContext[1];
    runner
        .withUserConfiguration(Work.class)
        .withPropertyValues(
            "retsu.lock.leaders.job.test-mode=always-leader",
            "retsu.lock.leaders.job.refresh-interval=20ms")
        .run(
            context -> {
              keep[0] = context;
              Work work = context.getBean(Work.class);
              await().atMost(Duration.ofSeconds(5)).until(() -> work.scheduled.get() >= 1);
              RetsuLeader leader = context.getBean("retsuLeader.job", RetsuLeader.class);
              context.stop(); // the lifecycle stop, as on shutdown
              assertThat(leader.isRunning()).isFalse();
              assertThat(leader.isLeader()).isFalse();
              assertThat(work.events).last().isInstanceOf(LeadershipRevokedEvent.class);
              assertThat(
                      ((LeadershipRevokedEvent) work.events.get(work.events.size() - 1))
                          .getReason())
                  .isEqualTo(LossReason.CLOSED);
              // The revoked event came after every @LeaderOnly call had returned.
              assertThat(work.inFlightAtRevoke).hasValue(0);
              Health health = context.getBean(RetsuLockHealthIndicator.class).health();
              assertThat(health.getStatus()).isEqualTo(Status.OUT_OF_SERVICE);
              int after = work.scheduled.get();
              await()
                  .during(Duration.ofMillis(200))
                  .atMost(Duration.ofSeconds(1))
                  .until(() -> work.scheduled.get() == after);
              leader.start(); // runs once per context
              assertThat(leader.isRunning()).isFalse();
              events.addAll(work.events);
            });
    assertThat(events).hasSize(2);
  }

  @Test
  void aLoopThatFailedMakesHealthDown() {
    runner
        .withBean(
            DataSource.class,
            () -> {
              PGSimpleDataSource unreachable = new PGSimpleDataSource();
              unreachable.setURL("jdbc:postgresql://127.0.0.1:1/none?connectTimeout=1");
              return unreachable;
            })
        .withPropertyValues("retsu.lock.leaders.job.retry-interval=1s")
        .run(
            context -> {
              RetsuLeader leader = context.getBean(RetsuLeaders.class).get("job");
              // The first attempt fails fast on purpose (core): the loop stops, FAILED.
              await().atMost(Duration.ofSeconds(10)).until(() -> leader.status().equals("failed"));
              Health health = context.getBean(RetsuLockHealthIndicator.class).health();
              assertThat(health.getStatus()).isEqualTo(Status.DOWN);
              assertThat(details(health, "job"))
                  .containsEntry("state", "FAILED")
                  .containsKey("error");
            });
  }

  @Test
  void springIntegrationEventsFollowOursWithTheRole() {
    runner
        .withUserConfiguration(Work.class)
        .withPropertyValues(
            "retsu.lock.leaders.job.test-mode=always-leader",
            "retsu.lock.leaders.job.role=cluster-jobs")
        .run(
            context -> {
              Work work = context.getBean(Work.class);
              await().atMost(Duration.ofSeconds(5)).until(() -> !work.integrationEvents.isEmpty());
              context.stop();
              assertThat(work.integrationEvents)
                  .extracting(e -> e.getClass().getSimpleName() + ":" + e.getRole())
                  .containsExactly("OnGrantedEvent:cluster-jobs", "OnRevokedEvent:cluster-jobs");
              assertThat(work.integrationLeaderAtEvent).containsExactly(true, false);
            });
  }

  @Test
  void withoutSpringIntegrationOnlyOurEvents() {
    runner
        .withClassLoader(new FilteredClassLoader(OnGrantedEvent.class))
        .withPropertyValues("retsu.lock.leaders.job.test-mode=never-leader")
        .run(
            context -> {
              assertThat(context).hasNotFailed();
              assertThat(context).doesNotHaveBean("retsuLockIntegrationLeaderEvents");
            });
  }

  @Test
  void actuatorPartsCanBeSwitchedOffAndNeedTheirModules() {
    String leader = "retsu.lock.leaders.job.test-mode=never-leader";
    runner
        .withPropertyValues(leader, "management.endpoints.web.exposure.include=health")
        .run(context -> assertThat(context).doesNotHaveBean(LeadersEndpoint.class));
    runner
        .withPropertyValues(leader, "management.health.retsu-lock.enabled=false")
        .run(context -> assertThat(context).doesNotHaveBean(RetsuLockHealthIndicator.class));
    runner
        .withPropertyValues(leader, "management.info.leader-election.enabled=false")
        .run(context -> assertThat(context).doesNotHaveBean(LeaderElectionInfoContributor.class));
    runner
        .withPropertyValues(leader, "management.endpoint.leaders.access=NONE")
        .run(context -> assertThat(context).doesNotHaveBean(LeadersEndpoint.class));
    runner
        .withPropertyValues(leader)
        .run(
            context -> {
              assertThat(context).hasSingleBean(RetsuLockHealthIndicator.class);
              assertThat(context).hasBean("retsuLockHealthIndicator");
              Info.Builder info = new Info.Builder();
              context.getBean(LeaderElectionInfoContributor.class).contribute(info);
              assertThat(info.build().getDetails()).containsKey("leaderElection");
              assertThat(info.build().getDetails().get("leaderElection").toString())
                  .contains("job", "role=standby", "retsu-lock:job");
            });
  }

  /**
   * In an application the import selector reads this file and skips an auto-configuration whose
   * optional module is missing before parsing it (ApplicationContextRunner registers classes
   * directly, so it cannot show that part).
   */
  @Test
  void everyOptionalPartIsGuardedByClassInTheGeneratedAutoConfigureMetadata() throws Exception {
    java.util.Properties metadata = new java.util.Properties();
    try (var in =
        getClass().getResourceAsStream("/META-INF/spring-autoconfigure-metadata.properties")) {
      metadata.load(in);
    }
    String p = "dev.retsu.lock.spring.boot.";
    assertThat(metadata.getProperty(p + "RetsuLockHealthAutoConfiguration.ConditionalOnClass"))
        .isEqualTo("org.springframework.boot.health.contributor.HealthIndicator");
    assertThat(metadata.getProperty(p + "RetsuLockInfoAutoConfiguration.ConditionalOnClass"))
        .contains("org.springframework.boot.actuate.info.InfoContributor");
    assertThat(metadata.getProperty(p + "RetsuLockEndpointAutoConfiguration.ConditionalOnClass"))
        .contains("org.springframework.boot.actuate.endpoint.annotation.Endpoint");
    assertThat(metadata.getProperty(p + "RetsuLockMetricsAutoConfiguration.ConditionalOnClass"))
        .contains("dev.retsu.lock.micrometer.LeaderMetrics");
    assertThat(metadata.getProperty(p + "RetsuLockObservationAutoConfiguration.ConditionalOnClass"))
        .isEqualTo("io.micrometer.observation.ObservationRegistry");
    assertThat(metadata.getProperty(p + "RetsuLockIntegrationAutoConfiguration.ConditionalOnClass"))
        .isEqualTo("org.springframework.integration.leader.event.OnGrantedEvent");
    String imports;
    try (var in =
        getClass()
            .getResourceAsStream(
                "/META-INF/spring/org.springframework.boot.autoconfigure.AutoConfiguration.imports")) {
      imports = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    }
    assertThat(imports.lines())
        .containsExactlyInAnyOrder(
            p + "RetsuLockAutoConfiguration",
            p + "RetsuLockHealthAutoConfiguration",
            p + "RetsuLockInfoAutoConfiguration",
            p + "RetsuLockEndpointAutoConfiguration",
            p + "RetsuLockMetricsAutoConfiguration",
            p + "RetsuLockObservationAutoConfiguration",
            p + "RetsuLockIntegrationAutoConfiguration");
  }

  @Test
  void leaderMetricsAreBoundPerDatabaseLeaderWhenARegistryExists() {
    withIdleDataSource
        .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
        .withPropertyValues(
            "retsu.lock.leaders.job.auto-startup=false",
            "retsu.lock.leaders.other.test-mode=always-leader")
        .run(
            context -> {
              MeterRegistry registry = context.getBean(MeterRegistry.class);
              assertThat(registry.find("retsu.lock.leader").tag("lock", "job").gauges()).hasSize(2);
              assertThat(registry.find("retsu.lock.leader").tag("lock", "other").gauges())
                  .isEmpty(); // test mode has no loop to measure
              context.close();
              assertThat(registry.find("retsu.lock.leader").gauges()).isEmpty();
            });
    withIdleDataSource
        .withPropertyValues("retsu.lock.leaders.job.auto-startup=false")
        .run(context -> assertThat(context).doesNotHaveBean("retsuLockLeaderMetrics"));
    withIdleDataSource
        .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
        .withClassLoader(new FilteredClassLoader("dev.retsu.lock.micrometer"))
        .withPropertyValues("retsu.lock.leaders.job.auto-startup=false")
        .run(context -> assertThat(context).doesNotHaveBean("retsuLockLeaderMetrics"));
  }

  @Test
  void oneObservationPerRefreshWithTheLeaderAsItsOnlyKey() {
    List<Observation.Context> stopped = new CopyOnWriteArrayList<>();
    ObservationRegistry observations = ObservationRegistry.create();
    observations
        .observationConfig()
        .observationHandler(
            new ObservationHandler<Observation.Context>() {
              @Override
              public void onStop(Observation.Context context) {
                stopped.add(context);
              }

              @Override
              public boolean supportsContext(Observation.Context context) {
                return true;
              }
            });
    runner
        .withBean(ObservationRegistry.class, () -> observations)
        .withUserConfiguration(Work.class)
        .withPropertyValues(
            "retsu.lock.leaders.job.test-mode=always-leader",
            "retsu.lock.leaders.job.refresh-interval=50ms")
        .run(
            context -> {
              Work work = context.getBean(Work.class);
              await().atMost(Duration.ofSeconds(5)).until(() -> stopped.size() >= 2);
              context.stop();
              assertThat(stopped)
                  .allSatisfy(
                      c -> {
                        assertThat(c.getName()).isEqualTo("retsu.lock.task");
                        assertThat(c.getLowCardinalityKeyValues().stream().map(KeyValue::getKey))
                            .containsExactly("retsu.lock.leader");
                        assertThat(c.getLowCardinalityKeyValue("retsu.lock.leader").getValue())
                            .isEqualTo("job");
                        assertThat(c.getHighCardinalityKeyValues()).isEmpty();
                      });
              assertThat(stopped.size()).isLessThanOrEqualTo(work.refreshes.get());
            });
    runner
        .withPropertyValues("retsu.lock.leaders.job.test-mode=never-leader")
        .run(context -> assertThat(context).doesNotHaveBean("retsuLockTaskObservation"));
  }

  @Test
  void leaderOnlyMethodsAreCheckedAtStartup() {
    runner
        .withUserConfiguration(UnknownLeader.class)
        .withPropertyValues("retsu.lock.leaders.job.test-mode=never-leader")
        .run(
            context ->
                assertThat(allMessages(context.getStartupFailure()))
                    .contains(
                        "must name a leader under retsu.lock.leaders [job], but was 'nobody'"));
    runner
        .withUserConfiguration(NotVoid.class)
        .withPropertyValues("retsu.lock.leaders.job.test-mode=never-leader")
        .run(
            context ->
                assertThat(allMessages(context.getStartupFailure()))
                    .contains("must return void (a standby does not run it), but was int"));
    runner
        .withUserConfiguration(FinalMethod.class)
        .withPropertyValues("retsu.lock.leaders.job.test-mode=never-leader")
        .run(
            context ->
                assertThat(allMessages(context.getStartupFailure()))
                    .contains("must be an overridable instance method"));
  }

  @Test
  void lazyInitializationStillStartsLeadersAfterTheRefresh() {
    runner
        .withInitializer(
            c -> c.addBeanFactoryPostProcessor(new LazyInitializationBeanFactoryPostProcessor()))
        .withUserConfiguration(Work.class)
        .withPropertyValues(
            "retsu.lock.leaders.job.test-mode=always-leader",
            "retsu.lock.leaders.job.refresh-interval=50ms")
        .run(
            context -> {
              Work work = context.getBean(Work.class);
              await().atMost(Duration.ofSeconds(5)).until(() -> work.refreshes.get() >= 1);
              assertThat(context.getBean(RetsuLeaders.class).get("job").isLeader()).isTrue();
            });
  }

  @Test
  void theDataSourceViewRefusesOutsideATerm() {
    runner
        .withPropertyValues("retsu.lock.leaders.job.test-mode=never-leader")
        .run(
            context -> {
              DataSource view = context.getBean(RetsuLeaders.class).get("job").dataSource();
              org.assertj.core.api.Assertions.assertThatThrownBy(view::getConnection)
                  .isInstanceOf(java.sql.SQLException.class)
                  .hasMessageContaining(
                      "No term of retsu-lock leader 'job' is bound to this thread")
                  .satisfies(
                      e ->
                          assertThat(((java.sql.SQLException) e).getSQLState()).isEqualTo("08003"));
            });
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> details(Health health, String leader) {
    return (Map<String, Object>)
        ((Map<String, Object>) health.getDetails().get("leaders")).get(leader);
  }

  @Configuration(proxyBeanMethods = false)
  @EnableScheduling
  static class Work {
    final AtomicInteger refreshes = new AtomicInteger();
    final AtomicInteger scheduled = new AtomicInteger();
    final AtomicInteger skippedCalls = new AtomicInteger();
    final AtomicInteger inFlight = new AtomicInteger();
    final AtomicInteger inFlightAtRevoke = new AtomicInteger(-1);
    final List<String> taskThreads = new CopyOnWriteArrayList<>();
    final List<LeadershipEvent> events = new CopyOnWriteArrayList<>();
    final List<AbstractLeaderEvent> integrationEvents = new CopyOnWriteArrayList<>();
    final List<Boolean> integrationLeaderAtEvent = new CopyOnWriteArrayList<>();

    @Bean("job")
    LeaderTask jobTask() {
      return ctx -> {
        taskThreads.add(Thread.currentThread().getName());
        refreshes.incrementAndGet();
      };
    }

    @Bean
    Scheduled1 scheduled1() {
      return new Scheduled1(this);
    }

    @Bean
    ApplicationListener<ApplicationEvent> recorder() {
      return event -> {
        if (event instanceof LeadershipRevokedEvent r) {
          inFlightAtRevoke.set(inFlight.get());
          events.add(r);
        } else if (event instanceof LeadershipEvent e) {
          events.add(e);
        } else if (event instanceof OnGrantedEvent || event instanceof OnRevokedEvent) {
          integrationEvents.add((AbstractLeaderEvent) event);
          integrationLeaderAtEvent.add(((AbstractLeaderEvent) event).getContext().isLeader());
        }
      };
    }
  }

  static class Scheduled1 {
    private final Work work;

    Scheduled1(Work work) {
      this.work = work;
    }

    /** Shows that scheduling runs for this bean, whether it leads or not. */
    @Scheduled(fixedDelay = 20)
    public void tick() {
      work.skippedCalls.incrementAndGet();
    }

    @Scheduled(fixedDelay = 20)
    @LeaderOnly("job")
    public void tickAsLeader() {
      work.inFlight.incrementAndGet();
      try {
        work.scheduled.incrementAndGet();
        try {
          Thread.sleep(5);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      } finally {
        work.inFlight.decrementAndGet();
      }
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class UnknownLeader {
    @Bean
    Object unknownLeader() {
      return new Object() {
        @LeaderOnly("nobody")
        public void run() {}
      };
    }
  }

  static class ReturnsInt {
    @LeaderOnly("job")
    public int run() {
      return 1;
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class NotVoid {
    @Bean
    ReturnsInt returnsInt() {
      return new ReturnsInt();
    }
  }

  static class HasFinal {
    @LeaderOnly("job")
    public final void run() {}
  }

  @Configuration(proxyBeanMethods = false)
  static class FinalMethod {
    @Bean
    HasFinal hasFinal() {
      return new HasFinal();
    }
  }
}
