package dev.retsu.lock.internal.group;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.LockKey;
import java.util.HashSet;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A member's rounds on stub slots, without a database: what a membership read leads the coordinator
 * to ask of which session (the keys of each statement, in which order, with which limit), and what
 * it leaves alone. Keys held elsewhere are simply not granted.
 */
class CoordinatorTest {

  @Test
  void aRoundWithoutAMembershipViewTriesNothing() {
    StubGroup g = new StubGroup(10, 2, 100);
    Coordinator c = new Coordinator(g.core, g.slots);
    g.membership(4, (long[]) null); // the membership read found the session gone
    c.round();
    g.membership(-1, 4); // no membership slot yet
    c.round();
    g.membership(4, 1, 2); // a read that does not list this member
    c.round();
    assertThat(g.log).isEmpty();
    assertThat(c.members()).isZero();
  }

  @Test
  void aMemberAloneSweepsEveryKeyOnceOverItsSessionsInStatementsOfAtMostBatchSizeKeys() {
    StubGroup g = new StubGroup(10, 2, 3);
    Coordinator c = new Coordinator(g.core, g.slots);
    g.membership(7, 7);
    c.round();
    assertThat(c.members()).isEqualTo(1);
    assertThat(g.tried()).containsExactlyInAnyOrderElementsOf(g.keys);
    assertThat(g.log).allSatisfy(t -> assertThat(t.keys()).hasSizeBetween(1, 3));
    assertThat(g.log).extracting(StubSlot.Try::slot).contains(0, 1);
    assertThat(g.log.get(0).limit()).as("an even share of the quota of 10").isEqualTo(5);
  }

  @Test
  void aMemberTriesItsPreferredRangeFirstUpToItsQuota() {
    StubGroup g = new StubGroup(9, 1, 100);
    Coordinator c = new Coordinator(g.core, g.slots);
    g.membership(17, 3, 17, 200); // rank 1 of 3: quota 3, range [3, 6)
    c.round();
    assertThat(c.members()).isEqualTo(3);
    StubSlot.Try first = g.log.get(0);
    assertThat(first.keys()).startsWith(g.key(3), g.key(4), g.key(5));
    assertThat(first.limit()).isEqualTo(3);
  }

  @Test
  void aKeyThisMemberYieldedIsNotTriedUntilItsCooldownHasPassed() {
    StubGroup g = new StubGroup(10, 1, 100);
    Coordinator c = new Coordinator(g.core, g.slots);
    g.membership(1, 1);
    g.core.coolDown(g.key(2), g.time.nanoTime() + TimeUnit.SECONDS.toNanos(5));
    c.round();
    assertThat(g.tried()).hasSize(9).doesNotContain(g.key(2));

    g.log.clear();
    g.time.advance(java.time.Duration.ofSeconds(5));
    c.round(); // the rounds after a change still sweep the ring
    assertThat(g.tried()).contains(g.key(2));
  }

  @Test
  void keysAnotherMemberHandedOffAreTriedFirstOnTheLeastLoadedSession() {
    StubGroup g = new StubGroup(10, 2, 100);
    Coordinator c = new Coordinator(g.core, g.slots);
    g.membership(1, 1, 2);
    g.slots.get(0).held = 4;
    g.slots.get(1).held = 1;
    long now = g.time.nanoTime();
    assertThat(g.core.handOff(8, now, now + TimeUnit.SECONDS.toNanos(30))).isTrue();
    c.round();
    assertThat(g.log.get(0)).isEqualTo(new StubSlot.Try(1, List.of(g.key(8)), 1));
  }

  @Test
  void aSessionBetweenSessionsIsSentNothingAndTheOpenOneTakesItsShare() {
    StubGroup g = new StubGroup(10, 2, 100);
    Coordinator c = new Coordinator(g.core, g.slots);
    g.membership(1, 1);
    g.slots.get(1).live = false;
    c.round();
    assertThat(g.log).isNotEmpty().allSatisfy(t -> assertThat(t.slot()).isZero());
    assertThat(g.log.get(0).limit()).isEqualTo(10);
  }

  @Test
  void aMemberWhoseMembershipSessionWasOpenedAgainPlansWithTheMembersItSawBeforeForAWhile() {
    StubGroup g = new StubGroup(12, 1, 100);
    Coordinator c = new Coordinator(g.core, g.slots);
    g.membership(2, 1, 2, 3);
    c.round();
    assertThat(g.log.get(0).limit()).as("quota of 12 keys over 3 members").isEqualTo(4);

    // The server restarted: this member is back under a new slot, one other member is not yet.
    g.log.clear();
    g.membership(5, 1, 5);
    c.round();
    assertThat(c.members()).isEqualTo(2);
    assertThat(g.log.get(0).limit()).as("still planned with 3 members").isEqualTo(4);

    g.log.clear();
    g.time.advance(
        StubGroup.HEARTBEAT.plus(StubGroup.RECONNECT).plus(StubGroup.MEMBERSHIP_INTERVAL));
    c.round();
    assertThat(g.log.get(0).limit()).as("the window has passed: 2 members").isEqualTo(6);
  }

  @Test
  @Timeout(10)
  void aSessionThatDoesNotAnswerEndsTheRoundAndItsKeysAreTriedAgainNextRound() {
    StubGroup g = new StubGroup(10, 2, 3);
    Coordinator c = new Coordinator(g.core, g.slots);
    g.membership(1, 1);
    g.slots.get(1).answers = false;
    c.round(); // returns once the bounded wait for slot 1 has run out
    assertThat(g.log).hasSize(2);
    List<LockKey> unanswered = g.log.get(1).keys();
    assertThat(g.log.get(1).slot()).isEqualTo(1);

    g.log.clear();
    g.slots.get(1).answers = true;
    c.round();
    assertThat(g.tried()).startsWith(unanswered.toArray(LockKey[]::new));
    assertThat(new HashSet<>(g.tried())).containsAll(g.keys(unanswered.size() + 3, 10));
  }
}
