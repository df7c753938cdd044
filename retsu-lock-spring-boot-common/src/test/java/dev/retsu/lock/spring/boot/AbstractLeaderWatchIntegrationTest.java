package dev.retsu.lock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.LeaderChange;
import dev.retsu.lock.LeaderInfo;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ApplicationContext;
import org.springframework.context.ApplicationListener;

/**
 * Spring Boot's leader watch on each line, two or three application contexts in one JVM on the real
 * PostgreSQL, with {@code retsu.lock.watch.enabled=true}: leader changes as {@link
 * LeaderChangedEvent}s on every replica, in order, from the event thread; the holder shaped like a
 * lease in health and the {@code leaders} endpoint, read without I/O; {@code yield} as the
 * endpoint's write operation; the {@code preferred} property handing leadership over.
 */
@ExtendWith(PostgresExtension.class)
public abstract class AbstractLeaderWatchIntegrationTest {

  private static final AtomicLong KEYS = new AtomicLong(9_500_000);

  private static TestDatabase db;

  /** The line under test. */
  protected final TestedBootLine line;

  /**
   * Creates the test for one line.
   *
   * @param line the line
   */
  protected AbstractLeaderWatchIntegrationTest(TestedBootLine line) {
    this.line = line;
  }

  @BeforeAll
  static void database(TestDatabase database) {
    db = database;
  }

  private long key() {
    return KEYS.incrementAndGet() + 1000L * line.major();
  }

  private ApplicationContextRunner candidate(String id, long key, DataSource ds, Changes changes) {
    List<Class<?>> all = new ArrayList<>(line.autoConfigurations());
    all.add(RetsuLockAutoConfiguration.class);
    all.add(RetsuLockEndpointAutoConfiguration.class);
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(all.toArray(Class<?>[]::new)))
        .withBean(DataSource.class, () -> ds)
        .withBean(Changes.class, () -> changes)
        .withPropertyValues(
            "management.endpoints.web.exposure.include=leaders",
            "retsu.lock.watch.enabled=true",
            "retsu.lock.candidate-id=" + id,
            "retsu.lock.leaders.job.key.value=" + key,
            "retsu.lock.leaders.job.retry-interval=200ms",
            "retsu.lock.leaders.job.refresh-interval=200ms");
  }

  @Test
  void everyReplicaHearsEveryChangeInOrderHealthShowsTheLeaseWithoutIoAndOnlyTheLeaderYields()
      throws Exception {
    long key = key();
    Changes seenByA = new Changes();
    Changes seenByB = new Changes();
    try (HikariDataSource poolA = pool("a");
        HikariDataSource poolB = pool("b")) {
      Cuttable dsB = new Cuttable(poolB);
      candidate("a", key, poolA, seenByA)
          .run(
              a -> {
                assertThat(a).hasNotFailed();
                RetsuLeader leaderA = a.getBean(RetsuLeaders.class).get("job");
                await().atMost(Duration.ofSeconds(10)).until(leaderA::isLeader);
                Term termA = leaderA.currentTerm().orElseThrow();
                candidate("b", key, dsB, seenByB)
                    .run(
                        b -> {
                          assertThat(b).hasNotFailed();
                          RetsuLeader leaderB = b.getBean(RetsuLeaders.class).get("job");
                          // The standby hears the leader: candidate, pid, token of a's term.
                          await()
                              .atMost(Duration.ofSeconds(10))
                              .until(() -> seenByB.leaders().contains("a"));
                          LeaderChangedEvent heard = seenByB.last();
                          assertThat(heard.isThisInstance()).isFalse();
                          assertThat(heard.getName()).isEqualTo("job");
                          assertThat(heard.getLeader().orElseThrow().pid())
                              .isEqualTo(termA.backendPid());
                          assertThat(heard.getToken()).contains(termA.fencingToken());
                          // The leader hears its own term too, as this instance.
                          await()
                              .atMost(Duration.ofSeconds(10))
                              .until(() -> seenByA.leaders().contains("a"));
                          assertThat(seenByA.events).anyMatch(LeaderChangedEvent::isThisInstance);
                          assertThat(seenByA.threads).containsOnly("retsu-lock-leader-events");
                          assertThat(seenByB.threads).containsOnly("retsu-lock-leader-events");

                          // Health: the leader's own lease, everything present.
                          Map<String, Object> own = holder(a);
                          assertThat(own)
                              .containsEntry("candidate", "a")
                              .containsEntry("pid", termA.backendPid())
                              .containsEntry("database", db.name())
                              .containsEntry("term", termA.number())
                              .containsEntry("token", termA.fencingToken().toString())
                              .containsEntry("acquiredAt", termA.start().toString())
                              .containsEntry("self", true)
                              .containsEntry("source", "own-term")
                              .containsKeys("lastRenewal", "validUntil");
                          // The standby's holder from the watch.
                          await().atMost(Duration.ofSeconds(10)).until(() -> holder(b) != null);
                          assertThat(holder(b))
                              .containsEntry("candidate", "a")
                              .containsEntry("pid", termA.backendPid())
                              .containsEntry("token", termA.fencingToken().toString())
                              .containsEntry("self", false)
                              .containsEntry("source", "watch");

                          // No I/O: b's DataSource refuses every connection (b's standby attempts
                          // fail meanwhile) and b's watch session is terminated; health and the
                          // endpoint still show the holder and borrow nothing on this thread.
                          LeaderChangeEvents watchB =
                              b.getBean(RetsuLeaders.class).changes().orElseThrow();
                          dsB.cut.set(true);
                          int borrowsBefore = dsB.borrowsHere();
                          assertThat(
                                  db.queryInts(
                                      "SELECT count(pg_terminate_backend(pid))::int FROM"
                                          + " pg_stat_activity WHERE application_name = ?",
                                      "retsu-lock-watch:" + watchB.name()))
                              .containsExactly(1);
                          await().atMost(Duration.ofSeconds(10)).until(() -> !watchB.connected());
                          assertThat(line.healthStatus(b)).isEqualTo("UP");
                          assertThat(holder(b))
                              .containsEntry("candidate", "a")
                              .containsEntry("pid", termA.backendPid());
                          Map<String, Object> shown =
                              b.getBean(LeadersEndpoint.class).leader("job");
                          assertThat(shown.get("holder").toString()).contains("candidate=a");
                          assertThat(dsB.borrowsHere())
                              .as("health and the endpoint borrowed no connection")
                              .isEqualTo(borrowsBefore);
                          dsB.cut.set(false);
                          await().atMost(Duration.ofSeconds(10)).until(watchB::connected);

                          // Only the leader yields: 409 on the standby, 400, 404, then 200.
                          LeadersEndpoint endpointA = a.getBean(LeadersEndpoint.class);
                          LeadersEndpoint endpointB = b.getBean(LeadersEndpoint.class);
                          WebEndpointResponse<Map<String, Object>> refused =
                              endpointB.yield("job", "5s", null);
                          assertThat(refused.getStatus()).isEqualTo(409);
                          assertThat(refused.getBody().get("error").toString())
                              .contains("(b) does not lead 'job'");
                          assertThat(refused.getBody().get("holder").toString())
                              .contains("candidate=a");
                          assertThat(endpointA.yield("job", "-1s", null).getStatus())
                              .isEqualTo(400);
                          assertThat(endpointA.yield("job", "soon", null).getBody().get("error"))
                              .asString()
                              .contains("but was \"soon\"");
                          assertThat(endpointA.yield("nope", null, null).getStatus())
                              .isEqualTo(404);
                          assertThat(leaderA.isLeader()).isTrue();
                          WebEndpointResponse<Map<String, Object>> yielded =
                              endpointA.yield("job", "30s", null);
                          assertThat(yielded.getStatus()).isEqualTo(200);
                          assertThat(yielded.getBody())
                              .containsEntry("yielded", true)
                              .containsEntry("cooldown", "PT30S");
                          await().atMost(Duration.ofSeconds(10)).until(leaderB::isLeader);
                          assertThat(leaderA.isLeader()).isFalse();
                          Term termB = leaderB.currentTerm().orElseThrow();
                          // Every replica hears a, nobody (a's graceful release), then b, in order.
                          for (Changes seen : List.of(seenByA, seenByB)) {
                            await()
                                .atMost(Duration.ofSeconds(10))
                                .until(() -> seen.leaders().contains("b"));
                            List<String> order = seen.leaders();
                            int ia = order.lastIndexOf("a");
                            assertThat(order.subList(ia, order.size()))
                                .containsExactly("a", "nobody", "b");
                            assertThat(seen.last().getToken()).contains(termB.fencingToken());
                            assertThat(seen.last().getChange().cause())
                                .isEqualTo(LeaderChange.Cause.ACQUIRED);
                          }
                          assertThat(seenByB.last().isThisInstance()).isTrue();
                          assertThat(holder(a))
                              .containsEntry("candidate", "b")
                              .containsEntry("source", "watch");
                        });
              });
    }
  }

  @Test
  void aSlowListenerDelaysOnlyLaterEventsNeverLeadership() throws Exception {
    long key = key();
    Changes seen = new Changes();
    CountDownLatch release = new CountDownLatch(1);
    seen.block = release;
    try (HikariDataSource pool = pool("slow")) {
      candidate("slow", key, pool, seen)
          .run(
              c -> {
                assertThat(c).hasNotFailed();
                RetsuLeader leader = c.getBean(RetsuLeaders.class).get("job");
                // The listener is stuck in the first event; the loop leads and refreshes anyway.
                await().atMost(Duration.ofSeconds(10)).until(() -> seen.blocked.get() == 1);
                await()
                    .atMost(Duration.ofSeconds(10))
                    .until(() -> leader.lastRefresh().isPresent());
                assertThat(seen.events).hasSize(1);
                assertThat(holder(c)).containsEntry("source", "own-term");
                release.countDown();
                await().atMost(Duration.ofSeconds(10)).until(() -> seen.leaders().contains("slow"));
                assertThat(seen.last().isThisInstance()).isTrue();
              });
    }
  }

  @Test
  void aPreferredCandidateTakesOverFromARunningLeader() throws Exception {
    long key = key();
    Changes seenByOld = new Changes();
    try (HikariDataSource poolOld = pool("old");
        HikariDataSource poolNew = pool("new")) {
      candidate("old", key, poolOld, seenByOld)
          .withBean(Revocations.class, Revocations::new)
          .run(
              old -> {
                RetsuLeader leaderOld = old.getBean(RetsuLeaders.class).get("job");
                await().atMost(Duration.ofSeconds(10)).until(leaderOld::isLeader);
                candidate("new", key, poolNew, new Changes())
                    .withPropertyValues("retsu.lock.preferred=true")
                    .run(
                        fresh -> {
                          assertThat(fresh).hasNotFailed();
                          RetsuLeader leaderNew = fresh.getBean(RetsuLeaders.class).get("job");
                          await().atMost(Duration.ofSeconds(10)).until(leaderNew::isLeader);
                          assertThat(leaderOld.isLeader()).isFalse();
                          assertThat(old.getBean(Revocations.class).reasons)
                              .containsExactly(LossReason.YIELDED);
                          await()
                              .atMost(Duration.ofSeconds(10))
                              .until(() -> seenByOld.leaders().contains("new"));
                        });
              });
    }
  }

  @Test
  @SuppressWarnings("unchecked")
  void aGroupsKeysAreHeardByNameShownAsLeasesAndYieldedOneByOne() throws Exception {
    Changes seen = new Changes();
    String namespace = "watch-group-" + key();
    try (HikariDataSource pool = pool("group")) {
      candidate("solo", key(), pool, seen)
          .withPropertyValues(
              "retsu.lock.groups.g.namespace=" + namespace,
              "retsu.lock.groups.g.keys=a,b",
              "retsu.lock.groups.g.sessions=1",
              "retsu.lock.groups.g.refresh-interval=200ms")
          .run(
              c -> {
                assertThat(c).hasNotFailed();
                RetsuLeaderGroup group = c.getBean(RetsuLeaders.class).group("g");
                await()
                    .atMost(Duration.ofSeconds(10))
                    .until(() -> group.holds("a") && group.holds("b"));
                // Each key's term is heard once, with its token (the failure shows what was).
                await()
                    .atMost(Duration.ofSeconds(10))
                    .untilAsserted(
                        () ->
                            assertThat(seen.events)
                                .filteredOn(e -> e.getName().equals("g") && e.isThisInstance())
                                .hasSize(2)
                                .allMatch(e -> e.getToken().isPresent()));
                assertThat(seen.events)
                    .filteredOn(e -> e.getName().equals("g"))
                    .allMatch(e -> e.getSource() == group)
                    .extracting(e -> e.getKeyName().orElseThrow())
                    .contains("a", "b");
                Map<String, Object> groups =
                    (Map<String, Object>) line.healthDetails(c).get("groups");
                Map<String, Object> holders =
                    (Map<String, Object>) ((Map<String, Object>) groups.get("g")).get("holders");
                assertThat((Map<String, Object>) holders.get("a"))
                    .containsEntry("candidate", "solo")
                    .containsEntry("source", "own-term")
                    .containsKeys("pid", "term", "token", "validUntil");

                LeadersEndpoint endpoint = c.getBean(LeadersEndpoint.class);
                assertThat(endpoint.yield("g", "30s", null).getBody().get("error"))
                    .asString()
                    .contains("key is required for group 'g'");
                assertThat(endpoint.yield("g", "30s", "zzz").getStatus()).isEqualTo(400);
                assertThat(endpoint.yield("g", "30s", "a").getStatus()).isEqualTo(200);
                assertThat(group.holds("a")).isFalse();
                assertThat(group.holds("b")).isTrue();
                WebEndpointResponse<Map<String, Object>> again = endpoint.yield("g", "30s", "a");
                assertThat(again.getStatus()).isEqualTo(409);
                assertThat(again.getBody().get("error"))
                    .asString()
                    .contains("(solo) does not hold key 'a' of group 'g'");
                // Every member hears key a released: nobody leads it during the cooldown.
                await()
                    .atMost(Duration.ofSeconds(10))
                    .until(
                        () -> {
                          List<LeaderChangedEvent> keyA =
                              seen.events.stream()
                                  .filter(e -> e.getKeyName().orElse("").equals("a"))
                                  .toList();
                          return keyA.get(keyA.size() - 1).getLeader().isEmpty();
                        });
              });
    }
  }

  @SuppressWarnings("unchecked")
  private Map<String, Object> holder(ApplicationContext context) {
    Map<String, Object> leaders = (Map<String, Object>) line.healthDetails(context).get("leaders");
    return (Map<String, Object>) ((Map<String, Object>) leaders.get("job")).get("holder");
  }

  private static HikariDataSource pool(String id) {
    HikariConfig c = new HikariConfig();
    c.setPoolName("retsu-lock-watch-test-" + id);
    c.setJdbcUrl(db.jdbcUrl());
    c.setUsername(db.user());
    c.setPassword(db.password());
    c.setMaximumPoolSize(4);
    return new HikariDataSource(c);
  }

  /** What one context's listener heard, and on which thread; it can block on its first event. */
  static final class Changes implements ApplicationListener<LeaderChangedEvent> {
    final List<LeaderChangedEvent> events = new CopyOnWriteArrayList<>();
    final List<String> threads = new CopyOnWriteArrayList<>();
    final AtomicInteger blocked = new AtomicInteger();
    volatile CountDownLatch block;

    @Override
    public void onApplicationEvent(LeaderChangedEvent event) {
      threads.add(Thread.currentThread().getName());
      events.add(event);
      CountDownLatch b = block;
      if (b != null && blocked.getAndIncrement() == 0) {
        try {
          b.await(30, TimeUnit.SECONDS); // the slow listener the test releases
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }

    /** The leaders heard, in order: candidate ids, {@code nobody} for none. */
    List<String> leaders() {
      List<String> out = new ArrayList<>();
      for (LeaderChangedEvent e : events) {
        out.add(e.getLeader().map(LeaderInfo::candidateId).orElse("nobody"));
      }
      return out;
    }

    LeaderChangedEvent last() {
      return events.get(events.size() - 1);
    }
  }

  /** The reasons of the revoked events. */
  static final class Revocations implements ApplicationListener<LeadershipRevokedEvent> {
    final List<LossReason> reasons = new CopyOnWriteArrayList<>();

    @Override
    public void onApplicationEvent(LeadershipRevokedEvent event) {
      reasons.add(event.getReason());
    }
  }

  /** A DataSource that counts the borrows of each thread and refuses them all while {@code cut}. */
  static final class Cuttable implements DataSource {
    final DataSource delegate;
    final AtomicBoolean cut = new AtomicBoolean();
    final Map<Thread, AtomicInteger> borrowsBy = new java.util.concurrent.ConcurrentHashMap<>();

    Cuttable(DataSource delegate) {
      this.delegate = delegate;
    }

    @Override
    public Connection getConnection() throws SQLException {
      borrowsBy.computeIfAbsent(Thread.currentThread(), t -> new AtomicInteger()).incrementAndGet();
      if (cut.get()) {
        throw new SQLException("the test cut this DataSource", "08001");
      }
      return delegate.getConnection();
    }

    @Override
    public Connection getConnection(String user, String password) throws SQLException {
      return getConnection();
    }

    /** How many connections the calling thread has borrowed (or tried to). */
    int borrowsHere() {
      AtomicInteger n = borrowsBy.get(Thread.currentThread());
      return n == null ? 0 : n.get();
    }

    @Override
    public PrintWriter getLogWriter() throws SQLException {
      return delegate.getLogWriter();
    }

    @Override
    public void setLogWriter(PrintWriter out) throws SQLException {
      delegate.setLogWriter(out);
    }

    @Override
    public void setLoginTimeout(int seconds) throws SQLException {
      delegate.setLoginTimeout(seconds);
    }

    @Override
    public int getLoginTimeout() throws SQLException {
      return delegate.getLoginTimeout();
    }

    @Override
    public Logger getParentLogger() {
      return Logger.getLogger("retsu-lock-test");
    }

    @Override
    public <T> T unwrap(Class<T> iface) throws SQLException {
      throw new SQLException("not a wrapper");
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) {
      return false;
    }
  }
}
