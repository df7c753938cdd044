package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.function.Consumer;
import java.util.function.IntConsumer;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Seeded random inputs for every option of {@link LeaderGroupBuilder}: each either works or fails
 * with NullPointerException / IllegalArgumentException / IllegalStateException whose message names
 * the option, and a builder that saw rejections still builds a group once fixed.
 */
class GroupApiFuzzTest {

  private static final long SEED = Long.getLong("retsu.fuzz.seed", 42L);
  private static final int ROUNDS = 2000;

  @Test
  void groupOptions() {
    Random r = new Random(SEED + 7);
    List<LockKey> keys = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      keys.add(LockKey.of(100L + i));
    }
    LeaderGroupBuilder b = LeaderGroup.builder(new PGSimpleDataSource(), "fuzz", keys);
    String[] durations = {
      "refreshInterval", "refreshTimeout", "heartbeatInterval", "selfFenceAfter",
      "idleSessionTimeout", "roundTripTimeout", "membershipInterval", "reconnectInterval",
      "closeTimeout"
    };
    String[] ints = {"sessions", "batchSize"};
    for (int i = 0; i < ROUNDS; i++) {
      Duration d = ApiFuzzTest.randomDuration(r);
      int which = r.nextInt(durations.length);
      Consumer<Duration> option =
          switch (which) {
            case 0 -> b::refreshInterval;
            case 1 -> b::refreshTimeout;
            case 2 -> v -> b.timing(FailoverTiming.DEFAULT.withHeartbeatInterval(v));
            case 3 -> v -> b.timing(FailoverTiming.DEFAULT.withSelfFenceAfter(v));
            case 4 -> v -> b.timing(FailoverTiming.DEFAULT.withServerIdleSessionTimeout(v));
            case 5 -> v -> b.timing(FailoverTiming.DEFAULT.withRoundTripTimeout(v));
            case 6 -> b::membershipInterval;
            case 7 -> b::reconnectInterval;
            default -> b::closeTimeout;
          };
      ApiFuzzTest.expectCleanOutcome(() -> option.accept(d), durations[which]);
      int n = r.nextInt(5) == 0 ? r.nextInt() : r.nextInt(40) - 5;
      int w = r.nextInt(ints.length);
      IntConsumer intOption = w == 0 ? b::sessions : b::batchSize;
      ApiFuzzTest.expectCleanOutcome(() -> intOption.accept(n), ints[w]);
      ApiFuzzTest.expectCleanOutcome(
          () -> b.listener(r.nextBoolean() ? null : LeaderListener.NO_OP), "listener");
      ApiFuzzTest.expectCleanOutcome(
          () -> {
            try {
              b.build().close();
            } catch (IllegalStateException e) {
              assertThat(e.getMessage())
                  .containsAnyOf("selfFenceAfter", "heartbeatInterval", "refreshTimeout");
              throw e;
            }
          },
          "");
    }
    b.timing(
            FailoverTiming.DEFAULT
                .withHeartbeatInterval(Duration.ofSeconds(1))
                .withSelfFenceAfter(Duration.ofSeconds(4))
                .withServerKeepalives(Duration.ofSeconds(5), Duration.ofSeconds(2), 3)
                .withServerIdleSessionTimeout(Duration.ofSeconds(20)))
        .refreshTimeout(Duration.ofSeconds(2));

    LeaderGroup group = b.build();
    assertThat(group.state()).isEqualTo(LeaderGroup.State.NEW);
    group.close();
  }
}
