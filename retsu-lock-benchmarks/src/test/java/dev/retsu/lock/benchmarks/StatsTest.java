package dev.retsu.lock.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class StatsTest {

  @Test
  void p95IsTheNearestRankAndTheMedianOfAnEvenCountIsTheMeanOfTheMiddleTwo() {
    List<Long> values = new ArrayList<>();
    for (long v = 20; v >= 1; v--) {
      values.add(v * 1000);
    }

    Stats s = Stats.of(values);

    assertThat(s.n()).isEqualTo(20);
    assertThat(s.min()).isEqualTo(1000);
    assertThat(s.median()).isEqualTo(10_500);
    assertThat(s.p95()).isEqualTo(19_000);
    assertThat(s.max()).isEqualTo(20_000);
  }

  @Test
  void noValuesGiveNotApplicable() {
    Stats s = Stats.of(List.of());

    assertThat(s.n()).isZero();
    assertThat(Stats.ms(s.median())).isEqualTo("n/a");
  }

  @Test
  void millisecondsKeepOneDecimalBelow100() {
    assertThat(Stats.ms(85_912)).isEqualTo("85.9");
    assertThat(Stats.ms(11_452_300)).isEqualTo("11452");
  }
}
