package dev.retsu.lock.internal.group;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.internal.session.Notices;
import org.junit.jupiter.api.Test;

/** Which member a member watches: the one before it, round the ring; itself never. */
class MemberWatchTest {

  @Test
  void eachMemberWatchesTheOneBeforeItRoundTheRing() {
    long[] ring = {3, 17, 200};
    assertThat(MemberWatch.previous(ring, 17)).isEqualTo(3);
    assertThat(MemberWatch.previous(ring, 200)).isEqualTo(17);
    assertThat(MemberWatch.previous(ring, 3)).isEqualTo(200);
  }

  @Test
  void aMemberAloneWatchesNobodyAndTwoWatchEachOther() {
    assertThat(MemberWatch.previous(new long[] {42}, 42)).isEqualTo(-1);
    assertThat(MemberWatch.previous(new long[] {5, 9}, 5)).isEqualTo(9);
    assertThat(MemberWatch.previous(new long[] {5, 9}, 9)).isEqualTo(5);
  }

  @Test
  void aWatchedSlotThatAMembershipReadNoLongerListsIsGone() {
    assertThat(MemberWatch.vanished(new long[] {3, 200}, 17)).isEqualTo(17);
    assertThat(MemberWatch.vanished(new long[] {3, 17, 200}, 17)).isEqualTo(-1);
    assertThat(MemberWatch.vanished(new long[] {3, 17}, -1)).isEqualTo(-1);
  }

  @Test
  void aYieldedNoticeSetsAWindowOfAtMostTheDocumentedBound() {
    assertThat(MemberWatch.handOff("yielded:3:30000", 8)).isEqualTo(new Notices.HandOff(3, 30_000));
    assertThat(MemberWatch.handOff("yielded:0:1000000000", 8))
        .isEqualTo(new Notices.HandOff(0, MemberWatch.MAX_HAND_OFF.toMillis()));
    assertThat(MemberWatch.MAX_HAND_OFF).isEqualTo(java.time.Duration.ofMinutes(5));
  }

  @Test
  void aYieldedNoticeForNoKeyOfTheGroupOrWithABadCooldownSetsNoWindow() {
    assertThat(MemberWatch.handOff("yielded:8:1000", 8)).isNull();
    assertThat(MemberWatch.handOff("yielded:-1:1000", 8)).isNull();
    assertThat(MemberWatch.handOff("yielded:1:-5", 8)).isNull();
    assertThat(MemberWatch.handOff("yielded:1:x", 8)).isNull();
    assertThat(MemberWatch.handOff("yielded:1:5:6", 8)).isNull();
    assertThat(MemberWatch.handOff("gone:1", 8)).isNull();
    assertThat(MemberWatch.handOff(null, 8)).isNull();
  }
}
