package dev.retsu.lock.spring.integration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertTimeout;

import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.ConcurrentModificationException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@code java.util.concurrent.locks.Lock} semantics of {@link RetsuLockRegistry} against
 * PostgreSQL, with two registries on two pools standing for two JVMs.
 */
@ExtendWith(PostgresExtension.class)
class RetsuLockRegistryIntegrationTest {

  private static final Duration AWAIT = Duration.ofSeconds(30);

  /** How long an ended session's backend may stay in pg_stat_activity after the client closed. */
  private static final Duration SESSION_GONE = Duration.ofSeconds(5);

  private TestDatabase db;
  private HikariDataSource poolA;
  private HikariDataSource poolB;
  private RetsuLockRegistry nodeA;
  private RetsuLockRegistry nodeB;
  private final ExecutorService threads = Executors.newCachedThreadPool();

  @BeforeEach
  void start(TestDatabase db) {
    this.db = db;
    poolA = SpringIntegrationTesting.pool(db, "a", 8);
    poolB = SpringIntegrationTesting.pool(db, "b", 8);
    nodeA = RetsuLockRegistry.builder(poolA).candidateId("node-a").build();
    nodeB =
        RetsuLockRegistry.builder(poolB)
            .candidateId("node-b")
            .waitSlice(Duration.ofMillis(500))
            .build();
  }

  @AfterEach
  void stop() {
    threads.shutdownNow();
    poolA.close();
    poolB.close();
  }

  private <T> T onOtherThread(java.util.concurrent.Callable<T> work) throws Exception {
    return threads.submit(work).get(30, TimeUnit.SECONDS);
  }

  @Test
  void aKeyHeldByOneNodeIsRefusedToTheOtherAndFreeWhenUnlockReturns() throws Exception {
    Lock a = nodeA.obtain("orders");
    Lock b = nodeB.obtain("orders");
    assertThat(nodeA.obtain("orders")).isSameAs(a);
    assertThat(a.tryLock()).isTrue();
    assertThat(b.tryLock()).isFalse();
    // A refused attempt holds nothing: its session is closed before tryLock returns, and its
    // backend leaves pg_stat_activity once the server has ended it.
    await().atMost(SESSION_GONE).until(() -> db.clientSessions("retsu-lock:node-b") == 0);
    a.unlock();
    assertThat(SpringIntegrationTesting.holderPid(db, nodeA.key("orders"))).isEqualTo(-1);
    assertThat(b.tryLock()).isTrue();
    b.unlock();
  }

  @Test
  void ownershipIsPerThreadAndReentrancyIsLocal() throws Exception {
    Lock a = nodeA.obtain("per-thread");
    a.lock();
    a.lock(); // re-entrant: proven with a round trip, no second session
    assertThat(a.tryLock()).isTrue();
    assertThat(db.clientSessions("retsu-lock:node-a")).isEqualTo(1);
    assertThat((boolean) onOtherThread(a::tryLock)).as("another thread of the same JVM").isFalse();
    assertThatThrownBy(
            () ->
                onOtherThread(
                    () -> {
                      a.unlock();
                      return null;
                    }))
        .hasCauseInstanceOf(IllegalMonitorStateException.class);
    a.unlock();
    a.unlock();
    assertThat(SpringIntegrationTesting.holderPid(db, nodeA.key("per-thread"))).isPositive();
    a.unlock();
    assertThat(SpringIntegrationTesting.holderPid(db, nodeA.key("per-thread"))).isEqualTo(-1);
    assertThatThrownBy(a::unlock).isInstanceOf(IllegalMonitorStateException.class);
  }

  @Test
  void aReentrantTryLockProvesOwnershipAndALostKeyThrowsConcurrentModification() throws Exception {
    Lock a = nodeA.obtain("lost");
    assertThat(a.tryLock()).isTrue();
    int pid = nodeA.lease("lost").orElseThrow().backendPid();
    nodeA.renewLock("lost"); // proven held
    assertThat(db.terminateBackend(pid)).isTrue();

    // Another node can take it at once; the holder learns at its next round trip.
    Lock b = nodeB.obtain("lost");
    await().pollInSameThread().atMost(AWAIT).until(b::tryLock); // b is held by this thread
    assertThatThrownBy(a::tryLock).isInstanceOf(ConcurrentModificationException.class);
    assertThatThrownBy(() -> nodeA.renewLock("lost"))
        .isInstanceOf(ConcurrentModificationException.class);
    assertThatThrownBy(a::unlock)
        .isInstanceOf(ConcurrentModificationException.class)
        .hasMessageContaining("no longer held by its session");
    assertThatThrownBy(a::unlock).isInstanceOf(IllegalMonitorStateException.class);
    b.unlock();
  }

  @Test
  void aBlockingLockWaitsOnASessionOfItsOwnAndIsGrantedWhenTheHolderUnlocks() throws Exception {
    Lock a = nodeA.obtain("queue");
    Lock b = nodeB.obtain("queue");
    a.lock();
    AtomicBoolean bHolds = new AtomicBoolean();
    Future<?> waiter =
        threads.submit(
            () -> {
              b.lock();
              bHolds.set(true);
              b.unlock();
              return null;
            });
    // the waiter sits in the server's lock queue on a session of its own
    await()
        .atMost(AWAIT)
        .until(
            () ->
                db.queryInts(
                            "SELECT count(*)::int FROM pg_stat_activity WHERE wait_event = 'advisory'"
                                + " AND application_name = 'retsu-lock:node-b'")
                        .get(0)
                    == 1);
    assertThat(bHolds).isFalse();
    a.unlock();
    waiter.get(30, TimeUnit.SECONDS);
    assertThat(bHolds).isTrue();
  }

  @Test
  void aTimedTryLockGivesUpAfterItsTimeAndHoldsNothing() throws Exception {
    Lock a = nodeA.obtain("timed");
    Lock b = nodeB.obtain("timed");
    a.lock();
    long start = System.nanoTime();
    assertThat((boolean) onOtherThread(() -> b.tryLock(300, TimeUnit.MILLISECONDS))).isFalse();
    assertThat(System.nanoTime() - start)
        .isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(300));
    await().atMost(AWAIT).until(() -> db.clientSessions("retsu-lock:node-b") == 0);
    a.unlock();
    assertThat(
            onOtherThread(
                () -> {
                  boolean got = b.tryLock(300, TimeUnit.MILLISECONDS);
                  b.unlock();
                  return got;
                }))
        .isTrue();
  }

  @Test
  void lockInterruptiblyAnswersAnInterruptWithinOneWaitSlice() throws Exception {
    Lock a = nodeA.obtain("interrupt");
    Lock b = nodeB.obtain("interrupt");
    a.lock();
    CompletableFuture<Throwable> outcome = new CompletableFuture<>();
    Thread t =
        new Thread(
            () -> {
              try {
                b.lockInterruptibly();
                outcome.complete(null);
              } catch (Throwable e) {
                outcome.complete(e);
              }
            },
            "retsu-lock-test-interruptible");
    t.start();
    await().atMost(AWAIT).until(() -> db.clientSessions("retsu-lock:node-b") == 1);
    t.interrupt();
    assertThat(outcome.get(10, TimeUnit.SECONDS)).isInstanceOf(InterruptedException.class);
    a.unlock();
    await().atMost(AWAIT).until(() -> db.clientSessions("retsu-lock:node-b") == 0);
  }

  @Test
  void releasingAKeyNeverWaitsBehindAnAcquireOfAnother() throws Exception {
    Lock mine = nodeA.obtain("mine");
    Lock theirs = nodeA.obtain("theirs");
    Lock heldElsewhere = nodeB.obtain("theirs");
    heldElsewhere.lock();
    mine.lock();
    Future<?> waiting =
        threads.submit(
            () -> {
              theirs.lock();
              theirs.unlock();
              return null;
            });
    await().atMost(AWAIT).until(() -> db.clientSessions("retsu-lock:node-a") == 2);
    // a key held while another key of the same registry waits: released at once, on its own session
    assertTimeout(Duration.ofSeconds(5), mine::unlock);
    assertThat(waiting).isNotDone();
    assertThat(SpringIntegrationTesting.holderPid(db, nodeA.key("mine"))).isEqualTo(-1);
    heldElsewhere.unlock();
    waiting.get(30, TimeUnit.SECONDS);
  }

  @Test
  void aHeldKeyCostsOneSessionAndExpiryDropsOnlyUnusedKeys() throws Exception {
    Lock held = nodeA.obtain("held");
    nodeA.obtain("unused");
    held.lock();
    assertThat(db.clientSessions("retsu-lock:node-a")).isEqualTo(1);
    nodeA.expireUnusedOlderThan(-1);
    assertThat(nodeA.size()).isEqualTo(1);
    assertThat(nodeA.obtain("held")).isSameAs(held);
    held.unlock();
    assertThat(SpringIntegrationTesting.holderPid(db, nodeA.key("held"))).isEqualTo(-1);
    await().atMost(SESSION_GONE).until(() -> db.clientSessions("retsu-lock:node-a") == 0);
    nodeA.expireUnusedOlderThan(-1);
    assertThat(nodeA.size()).isZero();
  }

  @Test
  void executeLockedExcludesAcrossNodesAndThreads() throws Exception {
    int[] counter = {0};
    List<Future<?>> workers = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      RetsuLockRegistry registry = i % 2 == 0 ? nodeA : nodeB;
      workers.add(
          threads.submit(
              () -> {
                for (int n = 0; n < 25; n++) {
                  registry.executeLocked(
                      "counter",
                      () -> {
                        int seen = counter[0];
                        Thread.sleep(1);
                        counter[0] = seen + 1;
                      });
                }
                return null;
              }));
    }
    for (Future<?> w : workers) {
      w.get(120, TimeUnit.SECONDS);
    }
    assertThat(counter[0]).isEqualTo(150);
  }

  @Test
  void registryRefusesKeysThatAreNotStringsAndConditions() {
    assertThatThrownBy(() -> nodeA.obtain(42))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("lockKey must be a String, but was a java.lang.Integer");
    assertThatThrownBy(() -> nodeA.obtain("c").newCondition())
        .isInstanceOf(UnsupportedOperationException.class);
    assertThatThrownBy(() -> nodeA.renewLock("never-held"))
        .isInstanceOf(IllegalMonitorStateException.class);
  }
}
