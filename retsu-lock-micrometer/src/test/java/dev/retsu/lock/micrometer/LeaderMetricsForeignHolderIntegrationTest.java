package dev.retsu.lock.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.FailoverTiming;
import dev.retsu.lock.LeaderGroup;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LeaderWatch;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.testing.LoginOnlyRole;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The {@value Names#HOLDER_FOREIGN} gauge on a real PostgreSQL: a session of a hostile role (it can
 * log in and nothing else) holds the key under a candidate's name; the loop's leader watch reports
 * it as foreign and the gauge shows 1; once it lets go and the candidate leads, 0; without a watch,
 * NaN. A group's {@value Names#GROUP_KEYS_FOREIGN} counts such keys the same way.
 */
@ExtendWith(PostgresExtension.class)
class LeaderMetricsForeignHolderIntegrationTest {

  private static final Duration WITHIN = Duration.ofSeconds(30);
  private static final AtomicInteger KEYS = new AtomicInteger(8_900_000);

  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final List<AutoCloseable> closeables = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (int i = closeables.size() - 1; i >= 0; i--) {
      closeables.get(i).close();
    }
  }

  private LeaderLoop loop(TestDatabase db, LockKey key, String id, LeaderWatch watch) {
    var b =
        LeaderLoop.builder(db.dataSource(), key)
            .candidateId(id)
            .retryInterval(Duration.ofMillis(100))
            .refreshInterval(Duration.ofMillis(200))
            .timing(FailoverTiming.DEFAULT.withHeartbeatInterval(Duration.ofMillis(100)));
    if (watch != null) {
      b.leaderWatch(watch);
    }
    LeaderLoop loop = b.build();
    closeables.add(loop);
    return loop;
  }

  private LeaderMetrics bound(LeaderLoop loop) {
    LeaderMetrics m = LeaderMetrics.builder(loop).lockName("foreign-test").build();
    m.bindTo(registry);
    closeables.add(m);
    return m;
  }

  private double foreign(String candidate) {
    return registry
        .get(Names.HOLDER_FOREIGN)
        .tags("lock", "foreign-test", "candidate", candidate)
        .gauge()
        .value();
  }

  @Test
  void theGaugeIsOneWhileAForeignSessionHoldsTheKeyAndZeroOnceACandidateLeads(TestDatabase db)
      throws Exception {
    LockKey key = LockKey.of(KEYS.incrementAndGet());
    LoginOnlyRole.Holder mallory = hostileHolder(db, key, "retsu-lock:victim#A1A0A1");
    LeaderWatch watch = LeaderWatch.open(db.dataSource());
    closeables.add(watch);
    LeaderLoop loop = loop(db, key, "victim", watch);
    LeaderMetrics metrics = bound(loop);
    assertThat(foreign("victim")).as("nothing reported yet").isNaN();

    loop.start(ctx -> ctx.ensureLeader());
    await().atMost(WITHIN).until(() -> foreign("victim") == 1.0);
    assertThat(loop.isLeader()).isFalse();
    assertThat(db.advisoryKeyHolders(key.value())).containsExactly(mallory.pid());

    mallory.unlock(key.value());
    await().atMost(WITHIN).until(loop::isLeader);
    await().atMost(WITHIN).until(() -> foreign("victim") == 0.0);

    metrics.close();
    assertThat(registry.find(Names.HOLDER_FOREIGN).gauges()).isEmpty();
  }

  @Test
  void withoutALeaderWatchTheGaugeStaysNaN(TestDatabase db) throws Exception {
    LockKey key = LockKey.of(KEYS.incrementAndGet());
    hostileHolder(db, key, "retsu-lock:blind#A1A0A1");
    LeaderLoop loop = loop(db, key, "blind", null);
    bound(loop);
    loop.start(ctx -> ctx.ensureLeader());
    await()
        .atMost(WITHIN)
        .until(
            () ->
                registry
                        .get(Names.ATTEMPTS)
                        .tags("candidate", "blind", "result", "held_elsewhere")
                        .counter()
                        .count()
                    >= 2);
    assertThat(foreign("blind")).isNaN();
  }

  @Test
  void aGroupCountsTheKeysItsWatchReportsHeldByAForeignSession(TestDatabase db) throws Exception {
    LockKey taken = LockKey.of(KEYS.incrementAndGet());
    LockKey free = LockKey.of(KEYS.incrementAndGet());
    LoginOnlyRole.Holder mallory = hostileHolder(db, taken, "retsu-lock:member#A1A0A1");
    LeaderWatch watch = LeaderWatch.open(db.dataSource());
    closeables.add(watch);
    LeaderGroup group =
        LeaderGroup.builder(db.dataSource(), "foreign-group-" + taken.value(), List.of(taken, free))
            .candidateId("member")
            .sessions(1)
            .membershipInterval(Duration.ofMillis(200))
            .leaderWatch(watch)
            .build();
    closeables.add(group);
    LeaderGroupMetrics metrics = LeaderGroupMetrics.of(group);
    metrics.bindTo(registry);
    closeables.add(metrics);
    assertThat(registry.get(Names.GROUP_KEYS_FOREIGN).gauge().value()).isNaN();

    group.start(ctx -> {});
    await().atMost(WITHIN).until(() -> group.currentTerm(free).isPresent());
    await()
        .atMost(WITHIN)
        .until(() -> registry.get(Names.GROUP_KEYS_FOREIGN).gauge().value() == 1.0);
    assertThat(group.currentTerm(taken)).isEmpty();

    mallory.unlock(taken.value());
    await().atMost(WITHIN).until(() -> group.currentTerm(taken).isPresent());
    await()
        .atMost(WITHIN)
        .until(() -> registry.get(Names.GROUP_KEYS_FOREIGN).gauge().value() == 0.0);
  }

  /**
   * A role that can log in and nothing else (PUBLIC's default {@code CONNECT}), dropped after the
   * test, whose session names itself {@code name} and takes {@code key}.
   */
  private LoginOnlyRole.Holder hostileHolder(TestDatabase db, LockKey key, String name)
      throws SQLException {
    LoginOnlyRole role = LoginOnlyRole.create(db, "mallory");
    closeables.add(0, role);
    LoginOnlyRole.Holder holder = role.hold(name, key.value());
    closeables.add(1, holder);
    assertThat(db.advisoryKeyHolders(key.value())).containsExactly(holder.pid());
    return holder;
  }
}
