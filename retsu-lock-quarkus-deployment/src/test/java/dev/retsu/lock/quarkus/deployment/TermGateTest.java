package dev.retsu.lock.quarkus.deployment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.FencingToken;
import dev.retsu.lock.LeaderContext;
import dev.retsu.lock.LeadershipLostException;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.SqlFunction;
import dev.retsu.lock.Term;
import dev.retsu.lock.quarkus.internal.TermGate;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * The leader-only gate without a database: work starts only inside a bound term, and a graceful end
 * interrupts the running work and returns (so the lock is released) only after it finished.
 */
class TermGateTest {

  private static final Term TERM =
      new Term(1, LockKey.of(7L), "me", Instant.EPOCH, new FencingToken(1, 0, 1), 42);

  @Test
  void workRunsOnlyOnceTheTermsContextIsBound() throws Exception {
    TermGate gate = new TermGate("[leader=t]", Duration.ofSeconds(5));
    AtomicBoolean ran = new AtomicBoolean();
    assertThat(gate.run(ctx -> ran.set(true))).as("no term").isFalse();
    gate.begin(TERM);
    assertThat(gate.run(ctx -> ran.set(true))).as("a term, before its first refresh").isFalse();
    StubContext ctx = new StubContext();
    gate.bind(ctx);
    assertThat(gate.run(c -> assertThat(gate.current()).isSameAs(c))).isTrue();
    assertThat(gate.current()).as("unbound after the work").isNull();
    gate.end(TERM, LossReason.CLOSED);
    assertThat(gate.run(c -> ran.set(true))).as("after the end").isFalse();
    assertThat(ran).isFalse();
  }

  @Test
  void aGracefulEndInterruptsTheWorkAndReturnsOnlyAfterItFinished() throws Exception {
    TermGate gate = new TermGate("[leader=t]", Duration.ofSeconds(30));
    gate.begin(TERM);
    gate.bind(new StubContext());
    CountDownLatch started = new CountDownLatch(1);
    AtomicBoolean finished = new AtomicBoolean();
    CompletableFuture<Boolean> work =
        untilInterrupted(
            gate,
            started,
            () -> {
              // cleaning up takes a while; the release must wait for it
              long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(300);
              while (System.nanoTime() < until) {
                Thread.onSpinWait();
              }
              finished.set(true);
            });
    assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
    gate.end(TERM, LossReason.CLOSED);
    assertThat(finished).as("the work had finished when the end returned").isTrue();
    assertThat(work.get(10, TimeUnit.SECONDS)).isTrue();
  }

  @Test
  void aLostSessionDoesNotWaitForTheWork() throws Exception {
    TermGate gate = new TermGate("[leader=t]", Duration.ofSeconds(30));
    gate.begin(TERM);
    gate.bind(new StubContext());
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicBoolean interrupted = new AtomicBoolean();
    CompletableFuture<Boolean> work =
        untilInterrupted(
            gate,
            started,
            () -> {
              interrupted.set(true);
              release.await(); // holds on past the end
            });
    assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
    gate.end(TERM, LossReason.SESSION_LOST);
    await().atMost(Duration.ofSeconds(10)).untilTrue(interrupted);
    assertThat(work).as("still running: the end did not wait").isNotDone();
    release.countDown();
    assertThat(work.get(10, TimeUnit.SECONDS)).isTrue();
  }

  /** What the work does once interrupted. */
  private interface OnInterrupt {
    void run() throws InterruptedException;
  }

  /**
   * Runs work through the gate on another thread: it counts {@code started} down, waits until
   * interrupted, then does {@code then}.
   */
  private static CompletableFuture<Boolean> untilInterrupted(
      TermGate gate, CountDownLatch started, OnInterrupt then) {
    return CompletableFuture.supplyAsync(
        () -> {
          try {
            return gate.run(
                ctx -> {
                  started.countDown();
                  try {
                    new CountDownLatch(1).await(); // until interrupted
                  } catch (InterruptedException e) {
                    then.run();
                  }
                });
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
        });
  }

  /** A context that leads until told otherwise; no connection. */
  private static final class StubContext implements LeaderContext {
    @Override
    public Term term() {
      return TERM;
    }

    @Override
    public Connection connection() {
      throw new UnsupportedOperationException("no connection in this test");
    }

    @Override
    public <T> T withConnection(SqlFunction<T> work) {
      throw new UnsupportedOperationException("no connection in this test");
    }

    @Override
    public boolean isLeader() {
      return true;
    }

    @Override
    public void ensureLeader() throws LeadershipLostException {}

    @Override
    public void proveLeader() {}
  }
}
