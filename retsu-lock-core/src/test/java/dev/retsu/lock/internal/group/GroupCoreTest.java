package dev.retsu.lock.internal.group;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The windows a member keeps per key, without a database: its own cooldown after a yield, and the
 * window in which it takes a key another member handed off.
 */
class GroupCoreTest {

  private static final long SECOND = TimeUnit.SECONDS.toNanos(1);

  @Test
  void aYieldedKeyMayBeTakenAgainOnlyFromTheEndOfItsCooldown() {
    StubGroup g = new StubGroup(4, 1, 100);
    long now = g.time.nanoTime();
    assertThat(g.core.mayTake(g.key(1), now)).as("never yielded").isTrue();
    g.core.coolDown(g.key(1), now + 5 * SECOND);
    assertThat(g.core.mayTake(g.key(1), now + 5 * SECOND - 1)).isFalse();
    assertThat(g.core.mayTake(g.key(1), now + 5 * SECOND)).isTrue();
    assertThat(g.core.mayTake(g.key(2), now)).as("only that key").isTrue();
  }

  @Test
  void aHandedOffKeyIsInItsWindowUntilTheWindowEndsAndANoticeForNoKeyIsIgnored() {
    StubGroup g = new StubGroup(4, 1, 100);
    long now = g.time.nanoTime();
    assertThat(g.core.handOff(2, now, now + 3 * SECOND)).isTrue();
    assertThat(g.core.handedOff(now).stream().toArray()).containsExactly(2);
    assertThat(g.core.handedOff(now + 3 * SECOND - 1).get(2)).isTrue();
    assertThat(g.core.handedOff(now + 3 * SECOND).isEmpty()).isTrue();

    assertThat(g.core.handOff(-1, now, now + SECOND)).isFalse();
    assertThat(g.core.handOff(4, now, now + SECOND)).isFalse();
    assertThat(g.core.handedOff(now).stream().toArray()).containsExactly(2);
  }
}
