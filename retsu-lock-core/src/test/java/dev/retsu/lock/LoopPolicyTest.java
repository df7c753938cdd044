package dev.retsu.lock;

import static dev.retsu.lock.StubLoops.HELD;
import static dev.retsu.lock.StubLoops.KEY;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retsu.lock.fakes.FakeTime;
import dev.retsu.lock.fakes.RecordingListener;
import dev.retsu.lock.internal.session.Refusals;
import dev.retsu.lock.internal.term.StubSession;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The loop's failure policy without a database, on stub leases and simulated time: what ends the
 * loop (EXIT, a transaction pooler, a failure before the database was ever reached) and what it
 * rides out (STEP_DOWN with its backoff, an outage after the first contact, a hot standby).
 * Milliseconds each; every wait the loop makes is recorded by {@link FakeTime}.
 */
class LoopPolicyTest {

  private static final Duration RETRY = Duration.ofSeconds(10);

  private final FakeTime time = new FakeTime();
  private final List<String> log = new CopyOnWriteArrayList<>();
  private final RecordingListener heard = new RecordingListener();

  private LeaderLoopBuilder builder() {
    return StubLoops.builder(time).retryInterval(RETRY).listener(heard);
  }

  private static AdvisoryLockException outage() {
    return new AdvisoryLockException(
        "Connection refused", KEY, "unit", new SQLException("Connection refused", "08001"));
  }

  @Test
  void underExitAFailedRefreshEndsTheLoopWithTheTermsReasonAndCauseAfterTheLockIsReleased() {
    LeaderLoop loop = StubLoops.loop(builder().failurePolicy(FailurePolicy.EXIT), log);
    IllegalStateException boom = new IllegalStateException("boom");

    assertThatThrownBy(
            () ->
                loop.run(
                    ctx -> {
                      throw boom;
                    }))
        .isInstanceOfSatisfying(
            LeadershipLostException.class,
            e -> {
              assertThat(e.reason()).isEqualTo(LossReason.REFRESH_FAILED);
              assertThat(e.getCause()).isSameAs(boom);
            })
        .hasMessageContaining("Term 1 ended");
    assertThat(loop.state()).isEqualTo(LeaderLoop.State.FAILED);
    assertThat(heard.kinds()).containsExactly("attempt", "acquired", "refreshFailed", "lost");
    assertThat(log).containsExactly("notified 1 released, unlocked all", "released");
    assertThat(time.sleeps).as("no wait: the loop ended").isEmpty();
  }

  @Test
  void underStepDownFailedTermsBackOffDoublingToTheCapAndATermThatRefreshedStartsTheCountAgain()
      throws Exception {
    LeaderLoop loop =
        StubLoops.loop(
            builder().refreshInterval(Duration.ofSeconds(1)).maxBackoff(Duration.ofSeconds(40)),
            log);
    Map<Long, Integer> refreshesByTerm = new ConcurrentHashMap<>();
    CountDownLatch sixthTerm = new CountDownLatch(1);
    CompletableFuture<Void> run =
        loop.start(
            ctx -> {
              long term = ctx.term().number();
              int refresh = refreshesByTerm.merge(term, 1, Integer::sum);
              if (term == 4 && refresh == 1) {
                return; // term 4 refreshes once, then fails
              }
              if (term == 6) {
                sixthTerm.countDown();
                new CountDownLatch(1).await(); // until closed
              }
              throw new IllegalStateException("refresh " + refresh + " of term " + term);
            });

    assertThat(sixthTerm.await(10, TimeUnit.SECONDS)).isTrue();
    loop.close();
    run.get(10, TimeUnit.SECONDS);

    assertThat(time.sleeps)
        .containsExactly(
            RETRY, // after term 1
            RETRY.multipliedBy(2), // term 2
            Duration.ofSeconds(40), // term 3: 80 s, capped
            Duration.ofSeconds(1), // term 4, between its refreshes
            RETRY, // term 4 had refreshed: the count starts again
            RETRY.multipliedBy(2)); // term 5
    assertThat(heard.lossReasons())
        .containsExactly(
            LossReason.REFRESH_FAILED,
            LossReason.REFRESH_FAILED,
            LossReason.REFRESH_FAILED,
            LossReason.REFRESH_FAILED,
            LossReason.REFRESH_FAILED,
            LossReason.CLOSED);
    assertThat(log).hasSize(12).containsOnly("notified 1 released, unlocked all", "released");
    assertThat(loop.state()).isEqualTo(LeaderLoop.State.CLOSED);
  }

  @Test
  void eachTermOfALoopIsNumberedOneAboveTheLast() throws Exception {
    LeaderLoop loop = StubLoops.loop(builder(), log);
    CountDownLatch third = new CountDownLatch(1);
    CompletableFuture<Void> run =
        loop.start(
            ctx -> {
              if (heard.acquired().size() >= 3) {
                third.countDown();
                new CountDownLatch(1).await(); // until closed
              }
              throw new IllegalStateException("term " + ctx.term().number() + " fails");
            });
    assertThat(third.await(10, TimeUnit.SECONDS)).isTrue();
    loop.close();
    run.get(10, TimeUnit.SECONDS);

    assertThat(heard.acquired()).extracting(Term::number).containsExactly(1L, 2L, 3L);
  }

  @Test
  void aFailureBeforeTheDatabaseWasEverReachedFailsFastWhateverThePolicy() {
    AdvisoryLockException unreachable = outage();
    LeaderLoop loop = StubLoops.loop(builder(), log, unreachable);

    assertThatThrownBy(() -> loop.run(ctx -> {})).isSameAs(unreachable);
    assertThat(loop.state()).isEqualTo(LeaderLoop.State.FAILED);
    assertThat(heard.of("attempt"))
        .singleElement()
        .extracting("detail")
        .isEqualTo(AttemptResult.ERROR);
    assertThat(time.sleeps).isEmpty();
  }

  @Test
  void afterTheFirstContactAnOutageAndAHotStandbyAreRiddenOutUnderStepDown() throws Exception {
    CountDownLatch leading = new CountDownLatch(1);
    LeaderLoop loop =
        StubLoops.loop(builder(), log, HELD, outage(), Refusals.hotStandby(KEY, "unit"));
    CompletableFuture<Void> run = loop.start(ctx -> leading.countDown());

    assertThat(leading.await(10, TimeUnit.SECONDS)).isTrue();
    loop.close();
    run.get(10, TimeUnit.SECONDS);

    assertThat(heard.of("attempt").stream().map(RecordingListener.Event::detail))
        .containsExactly(
            AttemptResult.HELD_ELSEWHERE,
            AttemptResult.ERROR,
            AttemptResult.ERROR,
            AttemptResult.ACQUIRED);
    assertThat(time.sleeps.subList(0, 3)).containsExactly(RETRY, RETRY, RETRY);
  }

  @Test
  void underExitAnOutageIsStillRiddenOutButAHotStandbyEndsTheLoop() {
    UnsafeSessionException hotStandby = Refusals.hotStandby(KEY, "unit");
    LeaderLoop loop =
        StubLoops.loop(
            builder().failurePolicy(FailurePolicy.EXIT), log, HELD, outage(), hotStandby);

    assertThatThrownBy(() -> loop.run(ctx -> {})).isSameAs(hotStandby);
    assertThat(time.sleeps).containsExactly(RETRY, RETRY);
  }

  @Test
  void aTransactionPoolerEndsTheLoopEvenUnderStepDown() {
    UnsafeSessionException pooler = Refusals.alreadyHeld(42, KEY, "unit");
    LeaderLoop loop = StubLoops.loop(builder(), log, HELD, pooler);

    assertThatThrownBy(() -> loop.run(ctx -> {}))
        .isSameAs(pooler)
        .extracting(e -> ((UnsafeSessionException) e).reason())
        .isEqualTo(LossReason.POOLER_DETECTED);
    assertThat(time.sleeps).containsExactly(RETRY);
  }

  @Test
  void aTermWhoseFencingTokenFailsReleasesTheLockAndIsRetriedUnderStepDown() throws Exception {
    StubSession broken =
        StubLoops.session(builder(), log, 7)
            .failingToken(new SQLException("connection lost", "08006"));
    CountDownLatch leading = new CountDownLatch(1);
    LeaderLoop loop = StubLoops.loop(builder(), log, broken);
    CompletableFuture<Void> run = loop.start(ctx -> leading.countDown());

    assertThat(leading.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(loop.currentTerm().orElseThrow().number())
        .as("a term that never started uses no number")
        .isEqualTo(1);
    loop.close();
    run.get(10, TimeUnit.SECONDS);

    assertThat(broken.isOpen()).isFalse();
    assertThat(heard.of("attempt").get(0).error())
        .hasMessageContaining(
            "Taking the fencing token failed (SQLState 08006); the session was ended");
    assertThat(heard.acquired()).hasSize(1);
    assertThat(time.sleeps.get(0)).isEqualTo(RETRY);
  }

  @Test
  void underExitATermWhoseFencingTokenFailsEndsTheLoop() {
    StubSession broken =
        StubLoops.session(builder(), log, 7)
            .failingToken(new SQLException("connection lost", "08006"));
    LeaderLoop loop = StubLoops.loop(builder().failurePolicy(FailurePolicy.EXIT), log, broken);

    assertThatThrownBy(() -> loop.run(ctx -> {}))
        .isInstanceOf(AdvisoryLockException.class)
        .hasMessageContaining(
            "Taking the fencing token failed (SQLState 08006); the session was ended")
        .hasRootCauseInstanceOf(SQLException.class);
    assertThat(log).containsExactly("released");
    assertThat(heard.acquired()).isEmpty();
  }
}
