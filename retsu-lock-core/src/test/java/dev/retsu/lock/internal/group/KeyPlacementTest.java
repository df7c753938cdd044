package dev.retsu.lock.internal.group;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.BitSet;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** How a round's decisions reach the sessions, on stub slots, without a database. */
class KeyPlacementTest {

  private static BitSet bits(int... indices) {
    BitSet b = new BitSet();
    for (int i : indices) {
      b.set(i);
    }
    return b;
  }

  @Test
  void handedOffKeysThisMemberHoldsOrCoolsDownFromAreNotTried() {
    StubGroup g = new StubGroup(10, 2, 100);
    KeyPlacement p = new KeyPlacement(g.core, g.slots, new Rebalancer(10));
    g.core.coolDown(g.key(3), g.time.nanoTime() + TimeUnit.SECONDS.toNanos(5));
    g.slots.get(0).held = 1;
    p.takeHandedOff(bits(1, 2, 3), bits(2));
    assertThat(g.log).containsExactly(new StubSlot.Try(1, List.of(g.key(1)), 1));
  }

  @Test
  void nothingHandedOffOrNoOpenSessionSendsNoStatement() {
    StubGroup g = new StubGroup(10, 2, 100);
    KeyPlacement p = new KeyPlacement(g.core, g.slots, new Rebalancer(10));
    p.takeHandedOff(new BitSet(), new BitSet());
    g.slots.forEach(s -> s.live = false);
    p.takeHandedOff(bits(1), new BitSet());
    p.takeUpToQuota(10);
    assertThat(g.log).isEmpty();
  }

  @Test
  void theBudgetBoundsTheKeysTriedInStatementsOfAtMostBatchSizeKeys() {
    StubGroup g = new StubGroup(10, 1, 2);
    KeyPlacement p = new KeyPlacement(g.core, g.slots, new Rebalancer(10));
    p.takeUpToQuota(7);
    assertThat(g.log).extracting(t -> t.keys().size()).containsExactly(2, 2, 2, 1);
    assertThat(g.tried()).containsExactlyElementsOf(g.keys(0, 7));
  }
}
