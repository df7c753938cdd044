package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

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

  private static Duration randomDuration(Random r) {
    return switch (r.nextInt(7)) {
      case 0 -> null;
      case 1 -> Duration.ZERO;
      case 2 -> Duration.ofNanos(-1 - r.nextInt(1000));
      case 3 -> Duration.ofSeconds(Long.MAX_VALUE / 2);
      case 4 -> Duration.ofNanos(1 + r.nextInt(1000));
      case 5 -> Duration.ofMillis(r.nextInt(100_000));
      default -> Duration.ofDays(r.nextInt(100));
    };
  }

  private static void expectCleanOutcome(Runnable call, String parameter) {
    try {
      call.run();
    } catch (NullPointerException | IllegalArgumentException | IllegalStateException e) {
      assertThat(e.getMessage()).as("message of %s", e).isNotNull().containsIgnoringCase(parameter);
    } catch (RuntimeException e) {
      fail("unexpected " + e + " for " + parameter, e);
    }
  }

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
      Duration d = randomDuration(r);
      int which = r.nextInt(durations.length);
      Consumer<Duration> option =
          switch (which) {
            case 0 -> b::refreshInterval;
            case 1 -> b::refreshTimeout;
            case 2 -> b::heartbeatInterval;
            case 3 -> b::selfFenceAfter;
            case 4 -> b::serverIdleSessionTimeout;
            case 5 -> b::roundTripTimeout;
            case 6 -> b::membershipInterval;
            case 7 -> b::reconnectInterval;
            default -> b::closeTimeout;
          };
      expectCleanOutcome(() -> option.accept(d), durations[which]);
      int n = r.nextInt(5) == 0 ? r.nextInt() : r.nextInt(40) - 5;
      int w = r.nextInt(ints.length);
      IntConsumer intOption = w == 0 ? b::sessions : b::batchSize;
      expectCleanOutcome(() -> intOption.accept(n), ints[w]);
      expectCleanOutcome(
          () -> b.listener(r.nextBoolean() ? null : LeaderListener.NO_OP), "listener");
      expectCleanOutcome(
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
    b.heartbeatInterval(Duration.ofSeconds(1))
        .selfFenceAfter(Duration.ofSeconds(4))
        .refreshTimeout(Duration.ofSeconds(2))
        .serverKeepalives(Duration.ofSeconds(5), Duration.ofSeconds(2), 3)
        .serverIdleSessionTimeout(Duration.ofSeconds(20));
    LeaderGroup group = b.build();
    assertThat(group.state()).isEqualTo(LeaderGroup.State.NEW);
    group.close();
  }
}
