package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Work on the leader's session from another thread of the leader (a {@code @Scheduled}
 * {@code @LeaderOnly} method, a worker pool), while the loop or the group idles between refreshes
 * on that session: the idle wait yields to it at once, so it is never starved.
 */
@ExtendWith(PostgresExtension.class)
class SessionHandOffIntegrationTest {

  private static final Duration WITHIN = Duration.ofSeconds(30);
  private static final Duration RUN_FOR = Duration.ofSeconds(4);
  private static final long EVERY_MS = 100;

  /**
   * The longest a statement from another thread may take here: far above one idle-wait slice plus a
   * round trip on a loaded machine, far below the heartbeat the idle wait used to hold the session
   * for.
   */
  private static final Duration STATEMENT_BOUND = Duration.ofMillis(500);

  private final List<AutoCloseable> closeables = new ArrayList<>();

  @AfterEach
  void close() throws Exception {
    for (AutoCloseable c : closeables) {
      c.close();
    }
  }

  @Test
  void anotherThreadOfTheLeaderGetsTheLoopsSessionWhileTheLoopIdles(TestDatabase db)
      throws Exception {
    AtomicReference<LeaderContext> term = new AtomicReference<>();
    // The defaults: refresh every 15 s, heartbeat every 2 s; the task returns at once.
    LeaderLoop loop = LeaderLoop.builder(db.dataSource(), TestKeys.next()).candidateId("a").build();
    closeables.add(loop);
    loop.start(term::set);
    await().atMost(WITHIN).until(() -> term.get() != null);
    assertStatementsFromAnotherThreadComplete(term.get());
  }

  @Test
  void anotherThreadOfTheMemberGetsAKeysSessionWhileTheGroupIdles(TestDatabase db)
      throws Exception {
    AtomicReference<LeaderContext> term = new AtomicReference<>();
    LeaderGroup group =
        LeaderGroup.builder(
                db.dataSource(),
                "handoff" + Long.toHexString(TestKeys.nextValue()),
                List.of(TestKeys.next(), TestKeys.next()))
            .candidateId("a")
            .sessions(1)
            .build();
    closeables.add(group);
    group.start(term::set);
    await().atMost(WITHIN).until(() -> term.get() != null);
    assertStatementsFromAnotherThreadComplete(term.get());
  }

  /**
   * Runs {@code SELECT 1} on the term's connection from this thread every 100 ms for a few seconds,
   * as {@code @Scheduled(fixedDelay = 100)} does: every run completes, none slower than the bound.
   */
  private static void assertStatementsFromAnotherThreadComplete(LeaderContext ctx)
      throws Exception {
    List<Long> took = new CopyOnWriteArrayList<>();
    long until = System.nanoTime() + RUN_FOR.toNanos();
    while (System.nanoTime() < until) {
      long start = System.nanoTime();
      try (Statement s = ctx.connection().createStatement();
          ResultSet rs = s.executeQuery("SELECT 1")) {
        rs.next();
      }
      ctx.ensureLeader();
      took.add(System.nanoTime() - start);
      TimeUnit.MILLISECONDS.sleep(EVERY_MS);
    }
    long longest = took.stream().mapToLong(Long::longValue).max().orElseThrow();
    assertThat(took.size())
        .as("runs completed in %s (one every %d ms + its statement)", RUN_FOR, EVERY_MS)
        .isGreaterThanOrEqualTo(
            (int) (RUN_FOR.toMillis() / (EVERY_MS + STATEMENT_BOUND.toMillis())));
    assertThat(longest)
        .as("the longest run took %d ms", TimeUnit.NANOSECONDS.toMillis(longest))
        .isLessThan(STATEMENT_BOUND.toNanos());
  }
}
