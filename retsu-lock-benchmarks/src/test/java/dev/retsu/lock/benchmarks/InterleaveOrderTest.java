package dev.retsu.lock.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The order in which {@code --interleave on} runs the configs' repetitions. */
class InterleaveOrderTest {

  @Test
  void eachRepetitionStartsWithTheNextConfigInTurn() {
    List<String> configs = List.of("retsu", "raw");
    assertThat(FailoverBenchmark.turn(configs, 1, c -> 20)).containsExactly("retsu", "raw");
    assertThat(FailoverBenchmark.turn(configs, 2, c -> 20)).containsExactly("raw", "retsu");
    assertThat(FailoverBenchmark.turn(configs, 3, c -> 20)).containsExactly("retsu", "raw");
    assertThat(FailoverBenchmark.turn(List.of("a", "b", "c"), 3, c -> 5))
        .containsExactly("c", "a", "b");
  }

  @Test
  void aConfigWithFewerRepetitionsDropsOutOnceItsAreDone() {
    Map<String, Integer> reps = Map.of("a", 1, "b", 3);
    List<String> configs = List.of("a", "b");
    assertThat(FailoverBenchmark.turn(configs, 1, reps::get)).containsExactly("a", "b");
    assertThat(FailoverBenchmark.turn(configs, 2, reps::get)).containsExactly("b");
    assertThat(FailoverBenchmark.turn(configs, 4, reps::get)).isEmpty();
  }
}
