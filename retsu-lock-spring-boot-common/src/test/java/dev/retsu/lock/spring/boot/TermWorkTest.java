package dev.retsu.lock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/** How the end of a term awaits its {@code @LeaderOnly} work, without a database. */
class TermWorkTest {

  @Test
  void theEndAwaitsWorkThatIgnoresItsInterruptButNotWorkThatYieldsTheTerm() throws Exception {
    TermWork work = new TermWork(null);
    CountDownLatch inside = new CountDownLatch(2);
    CountDownLatch yielding = new CountDownLatch(1);
    AtomicBoolean release = new AtomicBoolean();
    Thread stubborn =
        new Thread(
            () -> {
              assertThat(work.enter()).isTrue();
              inside.countDown();
              while (!release.get()) {
                Thread.interrupted(); // ignores the interrupt
                Thread.onSpinWait();
              }
              work.leave();
            },
            "stubborn-work");
    Thread yielder =
        new Thread(
            () -> {
              assertThat(work.enter()).isTrue();
              work.handingOver(true); // in a yield of the term: it waits for the release
              inside.countDown();
              boolean waiting = true;
              while (waiting) {
                try {
                  yielding.await();
                  waiting = false;
                } catch (InterruptedException e) {
                  // the term's end interrupts it; a yield waits on for the release
                }
              }
              work.handingOver(false);
              work.leave();
            },
            "yielding-work");
    stubborn.start();
    yielder.start();
    try {
      assertThat(inside.await(10, TimeUnit.SECONDS)).isTrue();
      work.stop();
      assertThat(work.enter()).as("nothing new starts after the end").isFalse();
      // An interrupt of the ending thread does not cut the wait short; its flag is kept.
      Thread.currentThread().interrupt();
      assertThat(work.awaitOthers(Duration.ofMillis(200))).containsExactly(stubborn);
      assertThat(Thread.interrupted()).isTrue();
      release.set(true);
      assertThat(work.awaitOthers(Duration.ofSeconds(10))).isEmpty();
      assertThat(yielder.isAlive()).as("the yielding thread was not awaited").isTrue();
    } finally {
      release.set(true);
      yielding.countDown();
      stubborn.join(10_000);
      yielder.join(10_000);
    }
  }
}
