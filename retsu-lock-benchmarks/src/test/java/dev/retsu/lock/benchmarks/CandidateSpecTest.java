package dev.retsu.lock.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class CandidateSpecTest {

  @Test
  void argumentsRoundTrip() {
    CandidateSpec spec =
        new CandidateSpec(
            CandidateSpec.Impl.RETSU,
            "wait",
            "jdbc:postgresql://127.0.0.1:5432/db",
            "u",
            "c-1",
            42,
            Duration.ofMillis(500),
            Duration.ofSeconds(1),
            null,
            Duration.ofMillis(500),
            Duration.ofSeconds(2),
            Duration.ofSeconds(2),
            Duration.ofSeconds(1),
            1,
            Duration.ofSeconds(4));

    assertThat(CandidateSpec.parse(spec.toArgs().toArray(String[]::new))).isEqualTo(spec);
  }

  @Test
  void aPooledFastFailoverCandidateRoundTrips() {
    CandidateSpec spec =
        new CandidateSpec(
                CandidateSpec.Impl.RAW,
                "wait",
                "jdbc:postgresql://127.0.0.1:5432/db",
                "u",
                "c-2",
                7,
                Duration.ofSeconds(1),
                Duration.ofSeconds(1),
                null,
                null,
                null,
                null,
                null,
                0,
                null)
            .withPool("dbcp2")
            .withFastFailover();

    CandidateSpec parsed = CandidateSpec.parse(spec.toArgs().toArray(String[]::new));
    assertThat(parsed).isEqualTo(spec);
    assertThat(parsed.pool()).isEqualTo("dbcp2");
    assertThat(parsed.fast()).isTrue();
  }

  @Test
  void rejectsAnUnknownPool() {
    assertThatThrownBy(
            () ->
                CandidateSpec.parse(
                    new String[] {
                      "impl=RETSU", "key=1", "retryMs=1000", "refreshMs=1000", "pool=c3p0"
                    }))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("pool must be one of [dbcp2, hikari, plain], but was c3p0");
  }

  @Test
  void rejectsAnArgumentWithoutAName() {
    assertThatThrownBy(() -> CandidateSpec.parse(new String[] {"impl"}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("arguments must be name=value, but was impl");
  }
}
