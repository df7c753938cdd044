package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.fakes.TestLoops;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import dev.retsu.lock.testing.VirtualThreadPins;
import dev.retsu.lock.testing.VirtualThreadPins.Pin;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The library's own code never pins a virtual thread's carrier: leader loops whose thread (and so
 * whose task) is virtual, with other virtual threads using the term's context at the same time, a
 * standby blocked in the waiting takeover on a virtual thread, a session killed under the leader,
 * and a group whose task hands work to virtual threads, all under a JFR recording of every {@value
 * VirtualThreadPins#PINNED_EVENT} (threshold 0). A pin whose first frame outside the JDK is ours
 * fails the test. Needs Java 21 or later: skipped on 17, run by {@code -Pvirtual-threads} on Java
 * 25. The last test shows that the recording does see a pin when one happens.
 */
@ExtendWith(PostgresExtension.class)
class VirtualThreadPinningIntegrationTest {

  private static final Duration WITHIN = Duration.ofSeconds(30);

  @BeforeAll
  static void needsVirtualThreads() {
    VirtualThreadPins.assumeAvailable();
  }

  @Test
  void leaderLoopsOnVirtualThreadsNeverPinACarrierInLibraryCode(TestDatabase db) throws Exception {
    LockKey key = TestKeys.next();
    AtomicInteger virtualTasks = new AtomicInteger();
    AtomicInteger platformTasks = new AtomicInteger();
    AtomicInteger helperCalls = new AtomicInteger();
    ThreadFactory helpers = VirtualThreadPins.factory("retsu-lock-test-helper-");
    LeaderTask task =
        ctx -> {
          (VirtualThreadPins.isVirtual(Thread.currentThread()) ? virtualTasks : platformTasks)
              .incrementAndGet();
          ctx.ensureLeader();
          ctx.withConnection(c -> query(c, "SELECT pg_sleep(0.005)"));
          // Another virtual thread works on the term's session while this one does: both block on
          // the session's I/O lock and its socket.
          AtomicReference<Throwable> failed = new AtomicReference<>();
          Thread helper =
              helpers.newThread(
                  () -> {
                    try {
                      ctx.ensureLeader();
                      ctx.withConnection(c -> query(c, "SELECT 1"));
                      helperCalls.incrementAndGet();
                    } catch (Throwable e) {
                      failed.set(e);
                    }
                  });
          helper.start();
          ctx.withConnection(c -> query(c, "SELECT 2"));
          helper.join();
          if (failed.get() instanceof LeadershipLostException lost) {
            throw lost;
          }
        };

    List<Pin> pins =
        VirtualThreadPins.during(
            () -> {
              LeaderLoop a = loop(db, key, "vt-a", TakeoverMode.POLL);
              LeaderLoop b = loop(db, key, "vt-b", TakeoverMode.WAIT);
              try {
                CompletableFuture<Void> runA =
                    a.start(task, VirtualThreadPins.factory("retsu-lock-test-vt-a-"));
                await().atMost(WITHIN).until(a::isLeader);
                CompletableFuture<Void> runB =
                    b.start(task, VirtualThreadPins.factory("retsu-lock-test-vt-b-"));
                await().atMost(WITHIN).until(() -> helperCalls.get() >= 3);

                // The leader's session is killed: its virtual thread sees the end, the waiting
                // standby's virtual thread is handed the lock, and a contends again.
                int pid = a.currentTerm().orElseThrow().backendPid();
                assertThat(db.terminateBackend(pid)).isTrue();
                await().atMost(WITHIN).until(b::isLeader);
                int before = helperCalls.get();
                await().atMost(WITHIN).until(() -> helperCalls.get() >= before + 3);

                a.close();
                b.close();
                runA.get(WITHIN.toSeconds(), TimeUnit.SECONDS);
                runB.get(WITHIN.toSeconds(), TimeUnit.SECONDS);
              } finally {
                a.close();
                b.close();
              }
            });

    assertThat(virtualTasks.get()).as("tasks run on the loops' virtual threads").isPositive();
    assertThat(platformTasks.get()).as("tasks on a platform thread").isZero();
    assertNoPinInLibraryCode(pins);
  }

  @Test
  void aGroupWhoseTaskHandsWorkToVirtualThreadsNeverPinsACarrierInLibraryCode(TestDatabase db)
      throws Exception {
    AtomicInteger helperCalls = new AtomicInteger();
    ThreadFactory helpers = VirtualThreadPins.factory("retsu-lock-test-group-helper-");

    List<Pin> pins =
        VirtualThreadPins.during(
            () -> {
              try (LeaderGroup group =
                  LeaderGroup.partitioned(db.dataSource(), "vt-" + TestKeys.nextValue(), 4)
                      .candidateId("vt-g")
                      .sessions(2)
                      .refreshInterval(Duration.ofMillis(100))
                      .build()) {
                group.start(
                    ctx -> {
                      Thread helper =
                          helpers.newThread(
                              () -> {
                                try {
                                  ctx.ensureLeader();
                                  ctx.withConnection(c -> query(c, "SELECT 1"));
                                  helperCalls.incrementAndGet();
                                } catch (Exception e) {
                                  // a key's term ended meanwhile: the next term's task tries again
                                }
                              });
                      helper.start();
                      helper.join();
                    });
                await().atMost(WITHIN).until(() -> helperCalls.get() >= 12);
              }
            });

    assertNoPinInLibraryCode(pins);
  }

  /**
   * A virtual thread that blocks in a class initializer pins its carrier: the recording sees it.
   */
  @Test
  void theRecordingSeesAPinWhenOneHappens() throws Exception {
    List<Pin> pins =
        VirtualThreadPins.during(
            () -> {
              Thread t =
                  VirtualThreadPins.factory("retsu-lock-test-pinner-")
                      .newThread(() -> assertThat(PinsWhileInitialized.VALUE).isEqualTo(1));
              t.start();
              t.join();
            });

    assertThat(pins)
        .as("the pin a blocking class initializer makes")
        .anySatisfy(p -> assertThat(p.culprit()).startsWith(PinsWhileInitialized.class.getName()));
  }

  /** Sleeps in its initializer, which pins the virtual thread that first uses it. */
  private static final class PinsWhileInitialized {
    static final int VALUE = sleepThenOne();

    private static int sleepThenOne() {
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return 1;
    }
  }

  private static void assertNoPinInLibraryCode(List<Pin> pins) {
    // Pins caused by another library (pgjdbc) are printed for the compatibility notes, not failed.
    pins.forEach(p -> System.out.println("[virtual-threads] " + p));
    assertThat(pins)
        .as("pins whose first frame outside the JDK is the library's")
        .filteredOn(p -> p.causedBy("dev.retsu.lock", VirtualThreadPinningIntegrationTest.class))
        .isEmpty();
  }

  private static LeaderLoop loop(TestDatabase db, LockKey key, String id, TakeoverMode mode) {
    return TestLoops.fast(LeaderLoop.builder(db.dataSource(), key))
        .candidateId(id)
        .takeover(mode)
        .failurePolicy(FailurePolicy.STEP_DOWN)
        .build();
  }

  private static Void query(java.sql.Connection c, String sql) throws java.sql.SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
    }
    return null;
  }
}
