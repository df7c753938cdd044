package dev.retsu.lock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.LeaderInfo;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.testing.LoginOnlyRole;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ApplicationContext;
import org.springframework.context.ApplicationListener;

/**
 * A session of a hostile role (it can log in and nothing else) holds a leader's key under the
 * application's own candidate name, on each Boot line with a real PostgreSQL: health, the {@code
 * leaders} endpoint and {@link LeaderChangedEvent} show a foreign holder as exactly that, never as
 * this instance or any candidate's term; health stays UP; the leader's {@code
 * retsu.lock.holder.foreign} gauge is 1 with the watch (NaN without); once it lets go, the
 * candidate leads and is shown as itself again.
 */
@ExtendWith(PostgresExtension.class)
public abstract class AbstractForeignHolderIntegrationTest {

  private static final Duration WITHIN = Duration.ofSeconds(20);
  private static final AtomicLong KEYS = new AtomicLong(9_700_000);

  private static TestDatabase db;

  private final List<AutoCloseable> open = new ArrayList<>();

  /** The line under test. */
  protected final TestedBootLine line;

  /**
   * Creates the test for one line.
   *
   * @param line the line
   */
  protected AbstractForeignHolderIntegrationTest(TestedBootLine line) {
    this.line = line;
  }

  @BeforeAll
  static void database(TestDatabase database) {
    db = database;
  }

  @AfterEach
  void closeAll() throws Exception {
    for (int i = open.size() - 1; i >= 0; i--) {
      open.get(i).close();
    }
    open.clear();
  }

  private long key() {
    return KEYS.incrementAndGet() + 1000L * line.major();
  }

  private ApplicationContextRunner candidate(String id, long key, DataSource ds, boolean watch) {
    List<Class<?>> all = new ArrayList<>(line.autoConfigurations());
    all.add(RetsuLockAutoConfiguration.class);
    all.add(RetsuLockEndpointAutoConfiguration.class);
    all.add(RetsuLockMetricsAutoConfiguration.class);
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(all.toArray(Class<?>[]::new)))
        .withBean(DataSource.class, () -> ds)
        .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
        .withBean(Changes.class, Changes::new)
        .withPropertyValues(
            "management.endpoints.web.exposure.include=leaders",
            "retsu.lock.watch.enabled=" + watch,
            "retsu.lock.candidate-id=" + id,
            "retsu.lock.leaders.job.key.value=" + key,
            "retsu.lock.leaders.job.retry-interval=200ms",
            "retsu.lock.leaders.job.refresh-interval=200ms");
  }

  @Test
  void aForeignSessionHoldingTheKeyUnderThisInstancesNameIsShownAsForeignNeverAsThisInstance()
      throws Exception {
    long key = key();
    LoginOnlyRole.Holder mallory = hostileHolder(key, "retsu-lock:app#A1A0A1");
    try (HikariDataSource pool = pool("foreign-watch")) {
      candidate("app", key, pool, true)
          .run(
              c -> {
                assertThat(c).hasNotFailed();
                RetsuLeader leader = c.getBean(RetsuLeaders.class).get("job");
                Changes seen = c.getBean(Changes.class);
                // The watch's first read: the key is held, by a session outside the role.
                await().atMost(WITHIN).until(() -> !seen.events.isEmpty());
                LeaderChangedEvent first = seen.events.get(0);
                LeaderInfo shownLeader = first.getLeader().orElseThrow();
                assertThat(shownLeader.pid()).isEqualTo(mallory.pid());
                assertThat(shownLeader.foreign()).isTrue();
                assertThat(first.isForeign()).isTrue();
                assertThat(first.isThisInstance()).isFalse();
                assertThat(first.getToken()).isEmpty();

                // Health: UP (the application is fine), the holder foreign, not this instance.
                await().atMost(WITHIN).until(() -> holder(c) != null);
                assertThat(line.healthStatus(c)).isEqualTo("UP");
                assertThat(leader.isLeader()).isFalse();
                assertThat(holder(c))
                    .containsEntry("pid", mallory.pid())
                    .containsEntry("foreign", true)
                    .containsEntry("self", false)
                    .containsEntry("candidate", "")
                    .containsEntry("source", "watch")
                    .doesNotContainKeys("token", "term");
                // The endpoint shows the same, and so does the gauge (the loop hears the watch).
                assertThat(endpointHolder(c))
                    .containsEntry("foreign", true)
                    .containsEntry("self", false);
                await().atMost(WITHIN).until(() -> foreignGauge(c) == 1.0);

                // It lets go: the candidate leads and is shown as itself, not foreign.
                mallory.unlock(key);
                await().atMost(WITHIN).until(leader::isLeader);
                await()
                    .atMost(WITHIN)
                    .until(() -> seen.events.stream().anyMatch(LeaderChangedEvent::isThisInstance));
                LeaderChangedEvent own =
                    seen.events.stream()
                        .filter(LeaderChangedEvent::isThisInstance)
                        .findFirst()
                        .orElseThrow();
                assertThat(own.isForeign()).isFalse();
                assertThat(own.getLeader().orElseThrow().candidateId()).isEqualTo("app");
                assertThat(holder(c))
                    .containsEntry("candidate", "app")
                    .containsEntry("foreign", false)
                    .containsEntry("self", true)
                    .containsEntry("source", "own-term");
                await().atMost(WITHIN).until(() -> foreignGauge(c) == 0.0);
              });
    }
  }

  @Test
  void withoutTheWatchTheEndpointReadsAForeignHolderAsForeign() throws Exception {
    long key = key();
    LoginOnlyRole.Holder mallory = hostileHolder(key, "retsu-lock:app#A1A0A1");
    try (HikariDataSource pool = pool("foreign-read")) {
      candidate("app", key, pool, false)
          .run(
              c -> {
                assertThat(c).hasNotFailed();
                RetsuLeader leader = c.getBean(RetsuLeaders.class).get("job");
                await().atMost(WITHIN).until(() -> "standby".equals(leader.status()));
                assertThat(line.healthStatus(c)).isEqualTo("UP");
                Map<String, Object> shown = endpointHolder(c);
                assertThat(shown)
                    .containsEntry("pid", mallory.pid())
                    .containsEntry("foreign", true)
                    .containsEntry("self", false)
                    .containsEntry("candidate", "")
                    .containsEntry("source", "pg_locks")
                    .doesNotContainKeys("token", "term");
                assertThat(foreignGauge(c)).as("no watch: not known").isNaN();
              });
    }
  }

  @Test
  @SuppressWarnings("unchecked")
  void aGroupKeyHeldByAForeignSessionIsShownAsForeignAndCounted() throws Exception {
    String namespace = "foreign-group-" + key();
    LockKey taken = LockKey.named(namespace, "a");
    LoginOnlyRole.Holder mallory = hostileHolder(taken.value(), "retsu-lock:app#A1A0A1");
    try (HikariDataSource pool = pool("foreign-group")) {
      candidate("app", key(), pool, true)
          .withPropertyValues(
              "retsu.lock.groups.g.namespace=" + namespace,
              "retsu.lock.groups.g.keys=a,b",
              "retsu.lock.groups.g.sessions=1",
              "retsu.lock.groups.g.refresh-interval=200ms",
              "retsu.lock.groups.g.membership-interval=200ms")
          .run(
              c -> {
                assertThat(c).hasNotFailed();
                RetsuLeaderGroup group = c.getBean(RetsuLeaders.class).group("g");
                await().atMost(WITHIN).until(() -> group.holds("b"));
                await().atMost(WITHIN).until(() -> groupHolder(c, "a") != null);
                assertThat(groupHolder(c, "a"))
                    .containsEntry("pid", mallory.pid())
                    .containsEntry("foreign", true)
                    .containsEntry("self", false)
                    .containsEntry("candidate", "")
                    .doesNotContainKeys("token", "term");
                assertThat(groupHolder(c, "b"))
                    .containsEntry("foreign", false)
                    .containsEntry("self", true);
                assertThat(line.healthStatus(c)).isEqualTo("UP");
                MeterRegistry registry = c.getBean(MeterRegistry.class);
                await()
                    .atMost(WITHIN)
                    .until(
                        () ->
                            registry
                                    .get("retsu.lock.group.keys.foreign")
                                    .tag("group", "g")
                                    .gauge()
                                    .value()
                                == 1.0);
                Changes seen = c.getBean(Changes.class);
                assertThat(seen.events)
                    .filteredOn(e -> e.getKeyName().orElse("").equals("a"))
                    .isNotEmpty()
                    .allMatch(e -> e.isForeign() && !e.isThisInstance());

                mallory.unlock(taken.value());
                await().atMost(WITHIN).until(() -> group.holds("a"));
                await()
                    .atMost(WITHIN)
                    .until(
                        () ->
                            registry
                                    .get("retsu.lock.group.keys.foreign")
                                    .tag("group", "g")
                                    .gauge()
                                    .value()
                                == 0.0);
              });
    }
  }

  @SuppressWarnings("unchecked")
  private Map<String, Object> groupHolder(ApplicationContext context, String keyName) {
    Map<String, Object> groups = (Map<String, Object>) line.healthDetails(context).get("groups");
    Map<String, Object> holders =
        (Map<String, Object>) ((Map<String, Object>) groups.get("g")).get("holders");
    return (Map<String, Object>) holders.get(keyName);
  }

  @SuppressWarnings("unchecked")
  private Map<String, Object> holder(ApplicationContext context) {
    Map<String, Object> leaders = (Map<String, Object>) line.healthDetails(context).get("leaders");
    return (Map<String, Object>) ((Map<String, Object>) leaders.get("job")).get("holder");
  }

  /** The leader's {@code retsu.lock.holder.foreign} gauge. */
  private static double foreignGauge(ApplicationContext context) {
    return context
        .getBean(MeterRegistry.class)
        .get("retsu.lock.holder.foreign")
        .tag("lock", "job")
        .gauge()
        .value();
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> endpointHolder(ApplicationContext context) {
    Map<String, Object> shown = context.getBean(LeadersEndpoint.class).leader("job");
    return (Map<String, Object>) shown.get("holder");
  }

  /**
   * A role that can log in and nothing else (PUBLIC's default {@code CONNECT}), dropped after the
   * test, whose session names itself {@code name} and takes {@code key}.
   */
  private LoginOnlyRole.Holder hostileHolder(long key, String name) throws SQLException {
    LoginOnlyRole role = LoginOnlyRole.create(db, "mallory");
    open.add(role);
    LoginOnlyRole.Holder holder = role.hold(name, key);
    open.add(holder);
    assertThat(db.advisoryKeyHolders(key)).containsExactly(holder.pid());
    return holder;
  }

  private static HikariDataSource pool(String id) {
    HikariConfig c = new HikariConfig();
    c.setPoolName("retsu-lock-foreign-test-" + id);
    c.setJdbcUrl(db.jdbcUrl());
    c.setUsername(db.user());
    c.setPassword(db.password());
    c.setMaximumPoolSize(4);
    return new HikariDataSource(c);
  }

  /** What the context's listener heard. */
  static final class Changes implements ApplicationListener<LeaderChangedEvent> {
    final List<LeaderChangedEvent> events = new CopyOnWriteArrayList<>();

    @Override
    public void onApplicationEvent(LeaderChangedEvent event) {
      events.add(event);
    }
  }
}
