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
import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.actuate.info.Info;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.availability.AvailabilityChangeEvent;
import org.springframework.boot.availability.LivenessState;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ApplicationContext;
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
 * health, info, endpoint, metrics, job metrics, observations, liveness, the data source qualifier,
 * groups' checks, and startup failures with core's messages. Shared by both Spring Boot lines: each
 * line's module runs it with its {@link TestedBootLine}.
 */
public abstract class AbstractRetsuLockAutoConfigurationTest {

  /** The line under test. */
  protected final TestedBootLine line;

  private final ApplicationContextRunner runner;

  /** A DataSource that is never connected to: its leaders do not start. */
  private final ApplicationContextRunner withIdleDataSource;

  /**
   * Creates the test for one line.
   *
   * @param line the line
   */
  protected AbstractRetsuLockAutoConfigurationTest(TestedBootLine line) {
    this.line = line;
    List<Class<?>> all = new java.util.ArrayList<>(line.autoConfigurations());
    all.addAll(
        List.of(
            RetsuLockAutoConfiguration.class,
            RetsuLockDisabledAutoConfiguration.class,
            RetsuLockInfoAutoConfiguration.class,
            RetsuLockEndpointAutoConfiguration.class,
            RetsuLockMetricsAutoConfiguration.class,
            RetsuLockObservationAutoConfiguration.class,
            RetsuLockIntegrationAutoConfiguration.class));
    this.runner =
        new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(all.toArray(Class<?>[]::new)))
            .withPropertyValues("management.endpoints.web.exposure.include=health,info,leaders");
    this.withIdleDataSource = runner.withBean(DataSource.class, PGSimpleDataSource::new);
  }

  /**
   * Returns the Spring Boot version this line's module asked the build to test on ({@code
   * retsu.tests.spring-boot}, set from {@code spring-boot3.version} or {@code
   * spring-boot4.version}).
   *
   * @return the version, e.g. {@code 4.1.2}
   */
  static String springBootTheBuildAskedFor() {
    String asked = System.getProperty("retsu.tests.spring-boot", "none");
    assertThat(asked)
        .as("retsu.tests.spring-boot, set by the Boot line's module")
        .isNotEqualTo("none")
        .isNotBlank();
    return asked;
  }

  @Test
  void theTestsRunOnTheSpringBootTheBuildAskedFor() {
    String asked = springBootTheBuildAskedFor();
    assertThat(asked).startsWith(line.major() + ".");
    assertThat(SpringBootVersion.getVersion()).isEqualTo(asked);
  }

  @Test
  void disabledLeavesNoLeaderInTheContextAndSkipsEveryLeaderOnlyMethod() {
    withIdleDataSource
        .withPropertyValues(
            "retsu.lock.enabled=false", "retsu.lock.leaders.job.test-mode=always-leader")
        .withBean(Counted.class)
        .run(
            context -> {
              assertThat(context).hasNotFailed();
              assertThat(context).doesNotHaveBean(RetsuLeaders.class);
              assertThat(context).doesNotHaveBean(RetsuLeader.class);
              assertThat(context).doesNotHaveBean("retsuLockHealthIndicator");
              assertThat(context).doesNotHaveBean(LeadersEndpoint.class);
              Counted counted = context.getBean(Counted.class);
              counted.run();
              counted.run();
              assertThat(counted.runs())
                  .as("runs of a @LeaderOnly method with the library turned off")
                  .isZero();
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
              assertThat(line.healthStatus(context)).isEqualTo("UP");
              assertThat(details(context, "job"))
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
              assertThat(line.healthStatus(context)).isEqualTo("UP");
              assertThat(details(context, "job")).containsEntry("role", "standby");
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
              assertThat(line.healthStatus(context)).isEqualTo("OUT_OF_SERVICE");
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
  void aLoopThatFailedForGoodIsDownAndPublishesLivenessBroken() {
    runner
        .withBean(
            DataSource.class,
            () -> {
              PGSimpleDataSource unreachable = new PGSimpleDataSource();
              unreachable.setURL("jdbc:postgresql://127.0.0.1:1/none?connectTimeout=1");
              return unreachable;
            })
        .withBean(Liveness.class, Liveness::new)
        .withPropertyValues(
            "retsu.lock.leaders.job.retry-interval=1s", "retsu.lock.leaders.job.fail-fast=true")
        .run(
            context -> {
              RetsuLeader leader = context.getBean(RetsuLeaders.class).get("job");
              // fail-fast: the first attempt that cannot connect ends the loop, FAILED for good.
              await().atMost(Duration.ofSeconds(10)).until(() -> leader.status().equals("failed"));
              assertThat(line.healthStatus(context)).isEqualTo("DOWN");
              assertThat(details(context, "job"))
                  .containsEntry("state", "FAILED")
                  .containsKey("error");
              // ... and the process says so to the platform: liveness BROKEN.
              await()
                  .atMost(Duration.ofSeconds(5))
                  .until(
                      () -> context.getBean(Liveness.class).states.contains(LivenessState.BROKEN));
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
        .run(context -> assertThat(context).doesNotHaveBean("retsuLockHealthIndicator"));
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
   * directly, so it cannot show that part). The shared auto-configurations' metadata comes from the
   * common module's jar, the health one's from the line's.
   */
  @Test
  void everyOptionalPartIsGuardedByClassInTheGeneratedAutoConfigureMetadata() throws Exception {
    java.util.Properties metadata = new java.util.Properties();
    java.util.Enumeration<java.net.URL> files =
        getClass()
            .getClassLoader()
            .getResources("META-INF/spring-autoconfigure-metadata.properties");
    while (files.hasMoreElements()) {
      try (var in = files.nextElement().openStream()) {
        metadata.load(in);
      }
    }
    String p = "dev.retsu.lock.spring.boot.";
    String l = line.linePackage();
    assertThat(metadata.getProperty(l + "RetsuLockHealthAutoConfiguration.ConditionalOnClass"))
        .isEqualTo(line.healthIndicatorClass());
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
            l + "RetsuLockBootLineAutoConfiguration",
            p + "RetsuLockAutoConfiguration",
            p + "RetsuLockDisabledAutoConfiguration",
            l + "RetsuLockHealthAutoConfiguration",
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
                        "must name a leader under retsu.lock.leaders [job] or a group under"
                            + " retsu.lock.groups [], but was 'nobody'",
                        "to configure the leader 'nobody', set a property under"
                            + " retsu.lock.leaders.nobody, for example"
                            + " retsu.lock.leaders.nobody.refresh-interval=15s"));
    // No leader at all: the same message, naming the property that makes the first one.
    runner
        .withUserConfiguration(UnknownLeader.class)
        .run(
            context ->
                assertThat(allMessages(context.getStartupFailure()))
                    .contains(
                        "must name a leader under retsu.lock.leaders [] or a group under"
                            + " retsu.lock.groups [], but was 'nobody'",
                        "retsu.lock.leaders.nobody.refresh-interval=15s"));
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

  @Test
  void aStandbyThatCannotReachTheDatabaseKeepsContendingIsUpAndSaysWhy() {
    runner
        .withBean(
            DataSource.class,
            () -> {
              PGSimpleDataSource unreachable = new PGSimpleDataSource();
              unreachable.setURL("jdbc:postgresql://127.0.0.1:1/none?connectTimeout=1");
              return unreachable;
            })
        .withBean(Liveness.class, Liveness::new)
        .withPropertyValues("retsu.lock.leaders.job.retry-interval=200ms")
        .run(
            context -> {
              RetsuLeader leader = context.getBean(RetsuLeaders.class).get("job");
              // The default (fail-fast false): the failed first contact is an outage to ride out.
              await()
                  .atMost(Duration.ofSeconds(10))
                  .until(() -> details(context, "job").containsKey("standby"));
              await()
                  .during(Duration.ofMillis(600))
                  .atMost(Duration.ofSeconds(5))
                  .until(() -> leader.status().equals("standby"));
              assertThat(line.healthStatus(context)).isEqualTo("UP");
              assertThat(details(context, "job")).containsEntry("state", "RUNNING");
              String standby = details(context, "job").get("standby").toString();
              assertThat(standby).contains("reason=database-unreachable", "SQLState 08001");
              assertThat(standby.split("SQLState 08001", -1))
                  .as("the SQLState is named once: %s", standby)
                  .hasSize(2);
              assertThat(context.getBean(Liveness.class).states)
                  .doesNotContain(LivenessState.BROKEN);
            });
  }

  @Test
  void leaderOnlyMethodsAndTheTaskAreCountedPerJobOnTheLeaderOnly() {
    MeterRegistry leaderRegistry = new SimpleMeterRegistry();
    runner
        .withUserConfiguration(Work.class)
        .withBean(MeterRegistry.class, () -> leaderRegistry)
        .withPropertyValues(
            "retsu.lock.leaders.job.test-mode=always-leader",
            "retsu.lock.leaders.job.refresh-interval=20ms")
        .run(
            context -> {
              Work work = context.getBean(Work.class);
              await().atMost(Duration.ofSeconds(5)).until(() -> work.scheduled.get() >= 3);
              await()
                  .atMost(Duration.ofSeconds(5))
                  .until(
                      () ->
                          runs(leaderRegistry, "Scheduled1.tickAsLeader", "success") >= 3
                              && runs(leaderRegistry, "job", "success") >= 2);
              assertThat(runs(leaderRegistry, "Scheduled1.tickAsLeader", "failure")).isZero();
              assertThat(
                      leaderRegistry
                          .get("retsu.lock.job.last.success")
                          .tags("lock", "job", "job", "Scheduled1.tickAsLeader")
                          .gauge()
                          .value())
                  .isPositive();
              // The unguarded @Scheduled method is no job.
              assertThat(
                      leaderRegistry
                          .find("retsu.lock.job.runs")
                          .tag("job", "Scheduled1.tick")
                          .counters())
                  .isEmpty();
            });
    MeterRegistry standbyRegistry = new SimpleMeterRegistry();
    runner
        .withUserConfiguration(Work.class)
        .withBean(MeterRegistry.class, () -> standbyRegistry)
        .withPropertyValues(
            "retsu.lock.leaders.job.test-mode=never-leader",
            "retsu.lock.leaders.job.refresh-interval=20ms")
        .run(
            context -> {
              Work work = context.getBean(Work.class);
              await().atMost(Duration.ofSeconds(5)).until(() -> work.skippedCalls.get() >= 5);
              // Registered at zero from the start, so "ran on exactly one replica" can be summed.
              assertThat(runs(standbyRegistry, "Scheduled1.tickAsLeader", "success")).isZero();
              assertThat(runs(standbyRegistry, "job", "success")).isZero();
              // Declared when the context started, before any call: a monthly job shows at 0 too.
              assertThat(runs(standbyRegistry, "Unscheduled.report", "success")).isZero();
              assertThat(
                      standbyRegistry
                          .get("retsu.lock.job.last.success")
                          .tags("job", "Scheduled1.tickAsLeader")
                          .gauge()
                          .value())
                  .isZero();
              context.close();
              assertThat(standbyRegistry.find("retsu.lock.job.runs").counters()).isEmpty();
            });
  }

  private static double runs(MeterRegistry registry, String job, String outcome) {
    var c =
        registry
            .find("retsu.lock.job.runs")
            .tags("lock", "job", "job", job, "outcome", outcome)
            .counter();
    return c == null ? -1 : c.count();
  }

  @Test
  void theDataSourceMarkedRetsuLockDataSourceIsTheLocksOwn() {
    PGSimpleDataSource app = new PGSimpleDataSource();
    app.setURL("jdbc:postgresql://127.0.0.1:1/app");
    PGSimpleDataSource locks = new PGSimpleDataSource();
    locks.setURL("jdbc:postgresql://127.0.0.1:1/locks");
    runner
        .withUserConfiguration(MarkedDataSource.class)
        .withBean("app", DataSource.class, () -> app, d -> d.setPrimary(true))
        .withPropertyValues("retsu.lock.leaders.job.auto-startup=false")
        .run(
            context -> {
              assertThat(context).hasNotFailed();
              assertThat(context.getBean(RetsuLeaders.class).lockDataSource())
                  .isSameAs(context.getBean("lockDataSource"))
                  .isNotSameAs(app);
            });
    // Without a marked one, the bean named retsuLockDataSource, then the primary.
    runner
        .withBean("app", DataSource.class, () -> app, d -> d.setPrimary(true))
        .withBean(RetsuLockAutoConfiguration.DATA_SOURCE_BEAN, DataSource.class, () -> locks)
        .withPropertyValues("retsu.lock.leaders.job.auto-startup=false")
        .run(
            context ->
                assertThat(context.getBean(RetsuLeaders.class).lockDataSource()).isSameAs(locks));
    runner
        .withBean("app", DataSource.class, () -> app, d -> d.setPrimary(true))
        .withBean("other", DataSource.class, () -> locks)
        .withPropertyValues("retsu.lock.leaders.job.auto-startup=false")
        .run(
            context ->
                assertThat(context.getBean(RetsuLeaders.class).lockDataSource()).isSameAs(app));
  }

  @Test
  void groupSettingsAndGroupLeaderOnlyMethodsAreCheckedAtStartup() {
    String group = "retsu.lock.groups.tenants.";
    withIdleDataSource
        .withPropertyValues(group + "auto-startup=false", group + "keys=a,b")
        .run(
            context -> {
              assertThat(context).hasNotFailed();
              RetsuLeaderGroup g =
                  context.getBean("retsuLeaderGroup.tenants", RetsuLeaderGroup.class);
              assertThat(g.group().keys())
                  .containsExactly(
                      dev.retsu.lock.LockKey.named("tenants", "a"),
                      dev.retsu.lock.LockKey.named("tenants", "b"));
              assertThat(g.status()).isEqualTo("not-started");
              assertThat(line.healthDetails(context)).containsKey("groups");
            });
    withIdleDataSource
        .withPropertyValues(group + "auto-startup=false", group + "partitions=3", group + "keys=a")
        .run(
            context ->
                assertThat(allMessages(context.getStartupFailure()))
                    .contains("retsu.lock.groups.tenants needs exactly one of keys or partitions"));
    withIdleDataSource
        .withPropertyValues(
            group + "auto-startup=false", group + "partitions=3", group + "sessions=0")
        .run(
            context ->
                assertThat(allMessages(context.getStartupFailure()))
                    .contains("retsu.lock.groups.tenants: sessions"));
    withIdleDataSource
        .withUserConfiguration(GroupKeyMissing.class)
        .withPropertyValues(group + "auto-startup=false", group + "partitions=3")
        .run(
            context ->
                assertThat(allMessages(context.getStartupFailure()))
                    .contains(
                        "names the group 'tenants' and must name one of its keys (a partition"
                            + " 0..2), but was key = '7'"));
  }

  /** Declares a DataSource with the qualifier, as an application would. */
  @Configuration(proxyBeanMethods = false)
  static class MarkedDataSource {
    @Bean
    @RetsuLockDataSource
    DataSource lockDataSource() {
      PGSimpleDataSource locks = new PGSimpleDataSource();
      locks.setURL("jdbc:postgresql://127.0.0.1:1/locks");
      return locks;
    }
  }

  static class PartitionSeven {
    @LeaderOnly(value = "tenants", key = "7")
    public void run() {}
  }

  @Configuration(proxyBeanMethods = false)
  static class GroupKeyMissing {
    @Bean
    PartitionSeven partitionSeven() {
      return new PartitionSeven();
    }
  }

  @SuppressWarnings("unchecked")
  private Map<String, Object> details(ApplicationContext context, String leader) {
    return (Map<String, Object>)
        ((Map<String, Object>) line.healthDetails(context).get("leaders")).get(leader);
  }

  /** Every liveness state the context published. */
  static final class Liveness implements ApplicationListener<AvailabilityChangeEvent<?>> {
    final List<Object> states = new CopyOnWriteArrayList<>();

    @Override
    public void onApplicationEvent(AvailabilityChangeEvent<?> event) {
      states.add(event.getState());
    }
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
    Unscheduled unscheduled() {
      return new Unscheduled();
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

  /** A leader-only method that counts its runs (read through a method: the bean is a proxy). */
  static class Counted {
    private final AtomicInteger runs = new AtomicInteger();

    @LeaderOnly("job")
    public void run() {
      runs.incrementAndGet();
    }

    public int runs() {
      return runs.get();
    }
  }

  /** A leader-only method nobody has called yet. */
  static class Unscheduled {
    @LeaderOnly("job")
    public void report() {}
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
