package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The token's one comparable form: its text sorts exactly like the token, parses back to it, and
 * nothing else parses.
 */
class FencingTokenTest {

  /** Parts drawn over the whole unsigned range and near the edges where digit counts change. */
  private static long part(SplittableRandom r) {
    switch (r.nextInt(5)) {
      case 0:
        return r.nextLong(); // any 64 bits, read unsigned
      case 1:
        return r.nextLong(0, 1_000);
      case 2:
        long p = 1;
        for (int i = r.nextInt(19); i > 0; i--) {
          p *= 10;
        }
        return p + r.nextInt(-1, 2);
      case 3:
        return -1 - r.nextInt(3); // 2^64 - 1 and just below
      default:
        return r.nextLong(0, Long.MAX_VALUE);
    }
  }

  private static FencingToken token(SplittableRandom r) {
    int timeline = r.nextInt(4) == 0 ? r.nextInt() : r.nextInt(0, 300);
    return new FencingToken(timeline, part(r), part(r));
  }

  @Test
  void theTextSortsLikeTheTokenAndReadsBackToIt() {
    SplittableRandom r = new SplittableRandom(20261206);
    List<FencingToken> tokens = new ArrayList<>();
    for (int i = 0; i < 20_000; i++) {
      FencingToken t = token(r);
      tokens.add(t);
      assertThat(FencingToken.parse(t.toString())).isEqualTo(t);
    }
    for (int i = 0; i < 200_000; i++) {
      FencingToken a = tokens.get(r.nextInt(tokens.size()));
      FencingToken b = i % 3 == 0 ? near(a, r) : tokens.get(r.nextInt(tokens.size()));
      assertThat(Integer.signum(a.toString().compareTo(b.toString())))
          .as("%s vs %s", a, b)
          .isEqualTo(Integer.signum(a.compareTo(b)));
    }
  }

  /** A token that shares a prefix of parts with {@code a}, so the later parts decide. */
  private static FencingToken near(FencingToken a, SplittableRandom r) {
    switch (r.nextInt(3)) {
      case 0:
        return new FencingToken(a.timeline(), a.redo(), part(r));
      case 1:
        return new FencingToken(a.timeline(), part(r), part(r));
      default:
        return new FencingToken(a.timeline(), a.redo(), a.xid() + r.nextInt(-2, 3));
    }
  }

  @Test
  void theOrderIsTimelineThenRedoThenXidEachUnsigned() {
    FencingToken base = new FencingToken(1, 704_643_112L, 12_059L);
    assertThat(base).hasToString("A1I704643112E12059");
    assertThat(new FencingToken(2, 0, 0)).isGreaterThan(base);
    assertThat(new FencingToken(1, 704_643_113L, 1)).isGreaterThan(base);
    assertThat(new FencingToken(1, 704_643_112L, 12_060L)).isGreaterThan(base);
    assertThat(new FencingToken(1, -1L, 0)).isGreaterThan(new FencingToken(1, Long.MAX_VALUE, 0));
    assertThat(new FencingToken(1, -1L, -1L))
        .hasToString("A1T18446744073709551615T18446744073709551615");
  }

  @Test
  void theFallbackSortsBelowEveryFullTokenAndEveryTokenAboveTheOldTexts() {
    // The fallback is (0, 0, xid): a server that does not support the WAL functions.
    FencingToken fallback = new FencingToken(0, 0, -1L);
    FencingToken smallestFull = new FencingToken(1, 0, 0);
    assertThat(fallback).isLessThan(smallestFull);
    assertThat(fallback.toString()).isLessThan(smallestFull.toString());
    // Earlier versions wrote <timeline>/<xid>: a digit first, below any capital letter.
    for (String old : List.of("1/742", "9/99999999999", "4294967295/18446744073709551615")) {
      assertThat(new FencingToken(0, 0, 0).toString()).isGreaterThan(old);
    }
  }

  @Test
  void onlyTheExactFormParses() {
    for (String bad :
        List.of(
            "",
            "1/742",
            "A1I704643112",
            "A1I704643112E12059 ",
            "A1I704643112E12059A",
            "A01I704643112E12059", // digit count says 1
            "B01A0A0", // a leading zero
            "A1I70464311xE12059",
            "a1a0a0",
            "K4294967296A0A0", // a timeline above 32 bits
            "T18446744073709551616A0A0", // above 64 bits
            "U100000000000000000000A0A0", // 21 digits
            "A1A0A\u0661")) { // a digit that is not ASCII
      assertThatThrownBy(() -> FencingToken.parse(bad))
          .as(bad)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("Not a fencing token: \"" + bad + "\"");
    }
    assertThat(FencingToken.parse("A0A0A0")).isEqualTo(new FencingToken(0, 0, 0));
  }
}
