package dev.retsu.lock.internal.group;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.FailoverTiming;
import dev.retsu.lock.LeaderGroup;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.testing.LoginOnlyRole;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The group's channel against a role that can connect and nothing else: it can notify the channel
 * (whose name follows from {@code pg_locks}), but what it sends is no member's notice, so it sets
 * no hand-off window and starts no round.
 */
@ExtendWith(PostgresExtension.class)
class LeaderGroupNoticesIntegrationTest {

  private static final int N = 8;
  private static final Duration WITHIN = Duration.ofSeconds(10);

  private final List<AutoCloseable> opened = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (int i = opened.size() - 1; i >= 0; i--) {
      opened.get(i).close();
    }
  }

  private static List<LockKey> keys() {
    List<LockKey> keys = new ArrayList<>();
    for (int i = 0; i < N; i++) {
      keys.add(TestKeys.next());
    }
    return keys;
  }

  private LeaderGroup start(
      TestDatabase db, String name, List<LockKey> keys, String id, Duration membership) {
    LeaderGroup g =
        LeaderGroup.builder(db.dataSource(), name, keys)
            .candidateId(id)
            .sessions(2)
            .membershipInterval(membership)
            .refreshInterval(Duration.ofMillis(200))
            .timing(FailoverTiming.DEFAULT.withHeartbeatInterval(Duration.ofMillis(500)))
            .reconnectInterval(Duration.ofMillis(200))
            .build();
    opened.add(g);
    g.start(ctx -> ctx.ensureLeader());
    return g;
  }

  /**
   * A session of a new role with LOGIN and nothing else (the database's default CONNECT for PUBLIC)
   * that notifies the group's channel with every payload, again and again every 20 ms.
   */
  private Forger forger(TestDatabase db, String group, List<String> payloads) throws SQLException {
    LoginOnlyRole role = LoginOnlyRole.create(db, "mallory");
    opened.add(role);
    PGSimpleDataSource ds = role.dataSource();
    Forger f =
        new Forger(
            ds.getConnection(), MemberWatch.channelOf(new Membership(group).namespace()), payloads);
    opened.add(f);
    return f;
  }

  private static final class Forger implements AutoCloseable {
    private final Connection c;
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
    private final AtomicLong sent = new AtomicLong();

    Forger(Connection c, String channel, List<String> payloads) {
      this.c = c;
      timer.scheduleAtFixedRate(
          () -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT pg_catalog.pg_notify(?, ?)")) {
              for (String p : payloads) {
                ps.setString(1, channel);
                ps.setString(2, p);
                ps.execute();
                sent.incrementAndGet();
              }
            } catch (SQLException e) {
              throw new IllegalStateException(e);
            }
          },
          0,
          20,
          TimeUnit.MILLISECONDS);
    }

    long sent() {
      return sent.get();
    }

    @Override
    public void close() throws SQLException {
      timer.shutdownNow();
      try {
        timer.awaitTermination(5, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      c.close();
    }
  }

  /**
   * A member holds all 8 keys; another joins while a foreign role sends {@code
   * yielded:<i>:1000000000} for every key, over and over: the joiner gets its fair share (4) within
   * the same bound as without the forger ({@link #aJoiningMemberGetsItsShareWithNoForger}).
   */
  @Test
  void aJoiningMemberGetsItsShareWhileAnotherRoleForgesYieldedNotices(TestDatabase db)
      throws Exception {
    joinAndGetTheShare(db, true);
  }

  /** The control of the test above: the same join, nobody forging. */
  @Test
  void aJoiningMemberGetsItsShareWithNoForger(TestDatabase db) throws Exception {
    joinAndGetTheShare(db, false);
  }

  /**
   * The same join while a session of the candidates' role that holds the group's watchers key (so
   * its notices count) claims to have yielded every key: the member holds them all, so none was the
   * sender's to yield, and no window keeps the member from yielding its surplus.
   */
  @Test
  void aYieldedNoticeSetsNoWindowForAKeyTheReceiverHolds(TestDatabase db) throws Exception {
    String name = "held-" + TestKeys.nextValue();
    List<LockKey> keys = keys();
    Duration membership = Duration.ofMillis(500);
    LeaderGroup a = start(db, name, keys, "a", membership);
    await().atMost(WITHIN).until(() -> a.heldCount() == N);
    Connection member = db.connect();
    try (PreparedStatement ps =
        member.prepareStatement("SELECT pg_catalog.pg_advisory_lock_shared(?::int4, ?::int4)")) {
      ps.setInt(1, new Membership(name).namespace());
      ps.setInt(2, Membership.SLOTS);
      ps.execute();
    }
    List<String> yielded = new ArrayList<>();
    for (int i = 0; i < N; i++) {
      yielded.add("yielded:" + i + ":1000000000");
    }
    Forger f = new Forger(member, MemberWatch.channelOf(new Membership(name).namespace()), yielded);
    opened.add(f);
    await().atMost(WITHIN).until(() -> f.sent() >= 5L * N);

    LeaderGroup b = start(db, name, keys, "b", membership);

    await("the joiner holds its fair share, 4 of 8")
        .atMost(WITHIN)
        .until(() -> b.heldCount() == N / 2 && a.heldCount() == N / 2);
  }

  private void joinAndGetTheShare(TestDatabase db, boolean forged) throws Exception {
    String name = "notices-" + TestKeys.nextValue();
    List<LockKey> keys = keys();
    Duration membership = Duration.ofMillis(500);
    LeaderGroup a = start(db, name, keys, "a", membership);
    await().atMost(WITHIN).until(() -> a.heldCount() == N);
    Forger f = null;
    if (forged) {
      List<String> yielded = new ArrayList<>();
      for (int i = 0; i < N; i++) {
        yielded.add("yielded:" + i + ":1000000000");
      }
      f = forger(db, name, yielded);
      Forger sending = f;
      await().atMost(WITHIN).until(() -> sending.sent() >= 5L * N);
    }

    LeaderGroup b = start(db, name, keys, "b", membership);

    await("the joiner holds its fair share, 4 of 8")
        .atMost(WITHIN)
        .until(() -> b.heldCount() == N / 2 && a.heldCount() == N / 2);
    assertThat(b.fairShare()).isEqualTo(N / 2);
    if (f != null) {
      long before = f.sent();
      Forger sending = f;
      await().atMost(WITHIN).until(() -> sending.sent() > before + N); // it never stopped
      assertThat(a.heldCount()).isEqualTo(N / 2);
      assertThat(b.heldCount()).isEqualTo(N / 2);
    }
  }

  /**
   * A member below its share (two keys held by another session) waits for its next round, 8 s away,
   * to take keys that went free: forged {@code gone} and {@code left} notices from a foreign role,
   * sent over and over, start no round, and the keys are taken at that round all the same.
   */
  @Test
  void forgedGoneAndLeftNoticesStartNoRound(TestDatabase db) throws Exception {
    String name = "rounds-" + TestKeys.nextValue();
    List<LockKey> keys = keys();
    try (Connection other = db.connect()) {
      for (LockKey k : keys.subList(N - 2, N)) {
        lock(other, "pg_advisory_lock", k);
      }
      LeaderGroup a = start(db, name, keys, "a", Duration.ofSeconds(8));
      await().atMost(WITHIN).until(() -> a.heldCount() == N - 2);
      // The rounds of its start are over: nothing changes until its next round.
      await().during(Duration.ofMillis(500)).atMost(WITHIN).until(() -> a.heldCount() == N - 2);
      for (LockKey k : keys.subList(N - 2, N)) {
        lock(other, "pg_advisory_unlock", k);
      }

      Forger f = forger(db, name, List.of("gone:0", "left:1", "gone:2", "left:3", "joined:4"));
      await().atMost(WITHIN).until(() -> f.sent() >= 20);
      await("no round: the member still holds 6 keys while 2 are free")
          .during(Duration.ofSeconds(2))
          .atMost(WITHIN)
          .until(() -> a.heldCount() == N - 2);

      // The keys were free all along: the next round takes them.
      await().atMost(Duration.ofSeconds(15)).until(() -> a.heldCount() == N);
    }
  }

  private static void lock(Connection c, String function, LockKey k) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT pg_catalog." + function + "(?::int8)")) {
      ps.setLong(1, k.value());
      ps.execute();
    }
  }

  /**
   * A session of another role locks membership slots of the group: they are not counted as members,
   * so the one real member keeps all its keys instead of yielding a share to nobody.
   */
  @Test
  void slotsAnotherRoleLocksAreNoMembers(TestDatabase db) throws Exception {
    String name = "foreign-slots-" + TestKeys.nextValue();
    List<LockKey> keys = keys();
    LoginOnlyRole role = LoginOnlyRole.create(db, "mallory");
    opened.add(role);
    PGSimpleDataSource ds = role.dataSource();
    Connection m = ds.getConnection();
    opened.add(m);
    int ns = new Membership(name).namespace();
    for (int slot = 0; slot < 3; slot++) {
      try (PreparedStatement ps =
          m.prepareStatement("SELECT pg_catalog.pg_advisory_lock(?::int4, ?::int4)")) {
        ps.setInt(1, ns);
        ps.setInt(2, slot * 50 + 7);
        ps.execute();
      }
    }
    LeaderGroup g = start(db, name, keys, "only", Duration.ofMillis(200));
    await().atMost(WITHIN).until(() -> g.heldCount() == N);
    await()
        .during(Duration.ofSeconds(1))
        .atMost(WITHIN)
        .until(() -> g.members() == 1 && g.heldCount() == N);
  }
}
