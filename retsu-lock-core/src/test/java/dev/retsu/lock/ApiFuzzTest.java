package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import java.time.Duration;
import java.util.Random;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Seeded random inputs for every public factory and option: each either works or fails with
 * NullPointerException / IllegalArgumentException / IllegalStateException whose message names the
 * parameter, and a failed call never leaves a builder unusable.
 */
class ApiFuzzTest {

  private static final long SEED = Long.getLong("retsu.fuzz.seed", 42L);
  private static final int ROUNDS = 2000;

  private static String randomString(Random r) {
    int kind = r.nextInt(6);
    int len =
        switch (kind) {
          case 0 -> 0;
          case 1 -> 1 + r.nextInt(4);
          case 2 -> 100_000 + r.nextInt(1000);
          default -> r.nextInt(200);
        };
    StringBuilder sb = new StringBuilder(len);
    for (int i = 0; i < len; i++) {
      int pick = r.nextInt(10);
      if (pick == 0) {
        sb.append('\u0000');
      } else if (pick == 1) {
        sb.append(':');
      } else if (pick == 2) {
        sb.appendCodePoint(0x1F600 + r.nextInt(50)); // emoji, outside the BMP
      } else if (pick == 3) {
        sb.append((char) (0x4E00 + r.nextInt(500)));
      } else {
        sb.append((char) (0x20 + r.nextInt(95)));
      }
    }
    return r.nextInt(20) == 0 ? null : sb.toString();
  }

  /** Shared with {@link GroupApiFuzzTest}. */
  static Duration randomDuration(Random r) {
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

  /** Shared with {@link GroupApiFuzzTest}. */
  static void expectCleanOutcome(Runnable call, String parameter) {
    try {
      call.run();
    } catch (NullPointerException | IllegalArgumentException | IllegalStateException e) {
      assertThat(e.getMessage()).as("message of %s", e).isNotNull().containsIgnoringCase(parameter);
      if (e instanceof IllegalArgumentException) {
        assertThat(e.getMessage().length()).isLessThan(1000);
      }
    } catch (RuntimeException e) {
      fail("unexpected " + e + " for " + parameter, e);
    }
  }

  @Test
  void lockKeyFactories() {
    Random r = new Random(SEED);
    System.out.println("ApiFuzzTest seed=" + SEED);
    for (int i = 0; i < ROUNDS; i++) {
      String ns = randomString(r);
      String name = randomString(r);
      String blamed =
          ns == null
              ? "namespace"
              : name == null ? "name" : ns.isEmpty() || ns.contains(":") ? "namespace" : "name";
      expectCleanOutcome(() -> LockKey.named(ns, name), blamed);
      expectCleanOutcome(() -> LockKey.sqlxCompatible(name), "name");
    }
  }

  @Test
  void leaderLoopOptions() {
    Random r = new Random(SEED + 1);
    LeaderLoopBuilder b = LeaderLoop.builder(new PGSimpleDataSource(), LockKey.of(1L));
    String[] names = {
      "retryInterval", "refreshInterval", "refreshTimeout", "heartbeatInterval", "selfFenceAfter",
      "idleSessionTimeout", "roundTripTimeout", "maxBackoff", "closeTimeout", "waitTimeout"
    };
    for (int i = 0; i < ROUNDS; i++) {
      Duration d = randomDuration(r);
      int which = r.nextInt(names.length);
      Consumer<Duration> option =
          switch (which) {
            case 0 -> b::retryInterval;
            case 1 -> b::refreshInterval;
            case 2 -> b::refreshTimeout;
            case 3 -> v -> b.timing(FailoverTiming.DEFAULT.withHeartbeatInterval(v));
            case 4 -> v -> b.timing(FailoverTiming.DEFAULT.withSelfFenceAfter(v));
            case 5 -> v -> b.timing(FailoverTiming.DEFAULT.withServerIdleSessionTimeout(v));
            case 6 -> v -> b.timing(FailoverTiming.DEFAULT.withRoundTripTimeout(v));
            case 7 -> b::maxBackoff;
            case 8 -> b::closeTimeout;
            default -> b::waitTimeout;
          };
      expectCleanOutcome(() -> option.accept(d), names[which]);
      double jitter = r.nextInt(4) == 0 ? Double.NaN : r.nextDouble() * 3 - 1;
      expectCleanOutcome(() -> b.retryJitter(jitter), "retryJitter");
      String id = randomString(r);
      expectCleanOutcome(() -> b.candidateId(id), "candidateId");
      expectCleanOutcome(
          () -> b.listener(r.nextBoolean() ? null : LeaderListener.NO_OP), "listener");
      // Whatever was accepted, build() either works or names the broken combination.
      expectCleanOutcome(
          () -> {
            try {
              b.build().close();
            } catch (IllegalStateException e) {
              assertThat(e.getMessage()).containsAnyOf("selfFenceAfter", "heartbeatInterval");
              throw e;
            }
          },
          "");
    }
    // A builder that saw thousands of rejections still builds a working loop once fixed.
    b.retryInterval(Duration.ofSeconds(1))
        .timing(
            FailoverTiming.DEFAULT
                .withHeartbeatInterval(Duration.ofSeconds(1))
                .withSelfFenceAfter(Duration.ofSeconds(3))
                .withServerKeepalives(Duration.ofSeconds(5), Duration.ofSeconds(2), 3)
                .withServerIdleSessionTimeout(Duration.ofSeconds(20)));

    LeaderLoop loop = b.build();
    assertThat(loop.state()).isEqualTo(LeaderLoop.State.NEW);
    loop.close();
  }
}
