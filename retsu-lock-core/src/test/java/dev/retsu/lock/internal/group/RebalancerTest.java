package dev.retsu.lock.internal.group;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retsu.lock.LeaderGroup;
import dev.retsu.lock.fakes.FakeTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The group's fair-share arithmetic and rebalancing decisions, without a database: members are
 * simulated over an in-memory lock table, one round per membership interval on simulated time.
 */
class RebalancerTest {

  private static final Duration INTERVAL = LeaderGroup.DEFAULT_MEMBERSHIP_INTERVAL;

  @Test
  void quotaIsTheCeilingAndQuotasAlwaysCoverEveryKey() {
    assertThat(Rebalancer.quota(60, 3)).isEqualTo(20);
    assertThat(Rebalancer.quota(61, 3)).isEqualTo(21);
    assertThat(Rebalancer.quota(10_000, 7)).isEqualTo(1_429);
    assertThat(Rebalancer.quota(3, 10)).isEqualTo(1);
    for (int n = 1; n <= 200; n++) {
      for (int m = 1; m <= 20; m++) {
        assertThat((long) Rebalancer.quota(n, m) * m).isGreaterThanOrEqualTo(n);
        assertThat(Rebalancer.quota(n, m) - 1).isLessThan((n + m - 1) / m + 1);
      }
    }
    assertThatThrownBy(() -> Rebalancer.quota(10, 0))
        .hasMessage("members must be at least 1, but was 0");
  }

  @Test
  void preferredRangesPartitionTheKeys() {
    for (int n : new int[] {1, 7, 60, 61, 10_000}) {
      for (int m = 1; m <= 12; m++) {
        int covered = 0;
        for (int r = 0; r < m; r++) {
          int from = Rebalancer.preferredStart(n, m, r);
          int to = Rebalancer.preferredStart(n, m, r + 1);
          assertThat(to).isGreaterThanOrEqualTo(from);
          assertThat(to - from).isLessThanOrEqualTo(Rebalancer.quota(n, m));
          covered += to - from;
        }
        assertThat(covered).isEqualTo(n);
      }
    }
  }

  @Test
  void surplusYieldsKeysOutsideTheOwnRangeFirst() {
    Rebalancer r = new Rebalancer(60);
    r.membership(2, 0); // range [0, 30)
    BitSet held = new BitSet();
    held.set(0, 60);
    List<Integer> surplus = r.surplus(held);
    assertThat(surplus).hasSize(30).allMatch(k -> k >= 30);
    held.clear();
    held.set(0, 25);
    held.set(40, 47); // 32 held: 2 over, both outside the range
    assertThat(r.surplus(held)).hasSize(2).allMatch(k -> k >= 40);
    held.clear();
    held.set(0, 29);
    assertThat(r.surplus(held)).isEmpty();
  }

  @Test
  void aWaveGivesEverySessionBelowItsShareAConsecutivePartAndNeverMoreThanIsMissing() {
    Rebalancer r = new Rebalancer(2_000);
    r.membership(1, 0); // alone: quota 2,000; four sessions, share 500
    BitSet held = new BitSet();
    held.set(0, 1_000); // the member's own half, 250 per session
    Wave w = Wave.next(r, held, 1_000, 1_000, new int[] {250, 250, 250, 250});
    assertThat(w.chunk().keys()).containsExactlyElementsOf(range(1_000, 2_000));
    assertThat(w.segments()).hasSize(4);
    for (int j = 0; j < 4; j++) {
      Wave.Segment seg = w.segments().get(j);
      assertThat(seg.session()).isEqualTo(j);
      assertThat(seg.limit()).isEqualTo(250);
      assertThat(seg.offset()).isEqualTo(250 * j);
      assertThat(seg.keys().keys())
          .containsExactlyElementsOf(range(1_000 + 250 * j, 1_250 + 250 * j));
    }
    // Every statement tried all its keys: the cursor goes past the whole chunk.
    assertThat(w.finish(r, new int[] {250, 250, 250, 250})).isEqualTo(1_000);

    // The least loaded session comes first, and the limits add up to what is missing.
    Rebalancer r2 = new Rebalancer(2_000);
    r2.membership(1, 0);
    BitSet h2 = new BitSet();
    h2.set(0, 1_900);
    Wave w2 = Wave.next(r2, h2, 1_000, 1_000, new int[] {500, 480, 440, 480});
    assertThat(w2.segments()).extracting(Wave.Segment::session).containsExactly(2, 1, 3);
    assertThat(w2.segments()).extracting(Wave.Segment::limit).containsExactly(60, 20, 20);
    assertThat(w2.chunk().keys()).containsExactlyElementsOf(range(1_900, 2_000));

    // Sessions down: an open one takes the rest; none open, nothing to do.
    Wave w3 = Wave.next(r2, h2, 1_000, 1_000, new int[] {-1, -1, 500, -1});
    assertThat(w3.segments())
        .singleElement()
        .satisfies(seg -> assertThat(seg.limit()).isEqualTo(100));
    assertThat(Wave.next(r2, h2, 1_000, 1_000, new int[] {-1, -1, -1, -1}).isEmpty()).isTrue();
    // At the quota, or with no budget left, there is no wave.
    h2.set(0, 2_000);
    assertThat(Wave.next(r2, h2, 1_000, 1_000, new int[] {500, 500, 500, 500}).isEmpty()).isTrue();
    h2.clear(1_999);
    assertThat(Wave.next(r2, h2, 0, 1_000, new int[] {500, 500, 500, 499}).isEmpty()).isTrue();
  }

  @Test
  void afterAWaveTheCursorStopsAtTheFirstKeyNoStatementTried() {
    Rebalancer r = new Rebalancer(100);
    r.membership(1, 0);
    BitSet held = new BitSet();
    // Two sessions, 10 keys each at most per statement: a chunk of 20, split 10 / 10.
    Wave w = Wave.next(r, held, 100, 10, new int[] {0, 0});
    assertThat(w.segments()).extracting(Wave.Segment::offset).containsExactly(0, 10);
    // The first statement stopped at its limit after 6 keys; the second tried all of its 10.
    assertThat(w.finish(r, new int[] {6, 10})).isEqualTo(6);
    assertThat(r.nextChunk(held, 3).keys()).containsExactly(6, 7, 8);
    // A session that did not answer: the cursor stops before its keys.
    Wave w2 = Wave.next(r, held, 100, 10, new int[] {0, 0});
    assertThat(w2.finish(r, new int[] {10, 0})).isEqualTo(10);
    assertThat(r.nextChunk(held, 1).keys()).containsExactly(16);
  }

  @Test
  void chunksWalkTheRingFromThePreferredRangeAndTheCursorMovesPastWhatWasTried() {
    Rebalancer r = new Rebalancer(60);
    r.membership(3, 1); // quota 20, range [20, 40)
    BitSet held = new BitSet();
    Rebalancer.Chunk first = r.nextChunk(held, 25);
    assertThat(first.keys()).containsExactlyElementsOf(range(20, 45));
    // All 25 tried and found held elsewhere: the next chunk goes on from there.
    assertThat(Rebalancer.tried(first, List.of(), 20)).isEqualTo(25);
    r.advance(first, 25);
    assertThat(r.nextChunk(held, 5).keys()).containsExactly(45, 46, 47, 48, 49);
    // The statement stopped after its limit of 2 grants, at positions 1 and 3: 4 keys were tried.
    Rebalancer.Chunk c = r.nextChunk(held, 10);
    assertThat(Rebalancer.tried(c, List.of(1, 3), 2)).isEqualTo(4);
    r.advance(c, 4);
    assertThat(r.nextChunk(held, 1).keys()).containsExactly(49);
    // Held keys are skipped, and a member at its quota gets nothing to try.
    held.set(49, 55);
    assertThat(r.nextChunk(held, 2).keys()).containsExactly(55, 56);
    held.set(0, 20);
    assertThat(r.nextChunk(held, 100).isEmpty()).isTrue();
    // A chunk walks the ring at most once.
    held.clear();
    held.set(0, 19);
    assertThat(r.nextChunk(held, 1_000).keys()).hasSize(41);
    // A new membership view restarts at the preferred range.
    assertThat(r.membership(2, 1)).isTrue();
    held.clear();
    assertThat(r.nextChunk(held, 3).keys()).containsExactly(30, 31, 32);
    assertThat(r.membership(2, 1)).isFalse();
    assertThatThrownBy(() -> r.membership(2, 2))
        .hasMessage("rank must be within 0..1 of 2 members, but was 2");
  }

  @Test
  void aRejoiningMemberPlansWithTheViewFromBeforeSoItTakesOnlyItsShareOfTheFreedKeys() {
    Rebalancer r = new Rebalancer(10_000);
    r.membership(10, 3);
    assertThat(r.quota()).isEqualTo(1_000);
    // The server restarted: this member is back first and sees two of the ten.
    assertThat(r.plannedMembers(2, true)).isEqualTo(10);
    r.membership(r.plannedMembers(2, true), 1);
    assertThat(r.quota()).isEqualTo(1_000);
    BitSet held = new BitSet();
    assertThat(r.nextChunk(held, 10_000).size()).isEqualTo(10_000); // tries, stops at the quota
    // More come back than before (a member joined meanwhile): the larger view wins.
    assertThat(r.plannedMembers(11, true)).isEqualTo(11);
    // Rejoining over, a member that did not come back is gone: its share is taken over.
    assertThat(r.plannedMembers(9, false)).isEqualTo(9);
    r.membership(9, 1);
    assertThat(r.quota()).isEqualTo(1_112);
  }

  @Test
  void budgetTriesWhatIsMissingFourTimesOverButAtLeastTheFloor() {
    assertThat(Rebalancer.budget(0, 256)).isZero();
    assertThat(Rebalancer.budget(1, 256)).isEqualTo(256);
    assertThat(Rebalancer.budget(5_000, 256)).isEqualTo(20_000);
  }

  // ------------------------------------------------------------------ simulation

  /** An in-memory lock table and members that run the group's round on it. */
  private static final class Cluster {
    final int n;
    final int[] owner; // -1 free
    final List<Member> members = new ArrayList<>();
    final FakeTime time = new FakeTime();
    long tries;
    long statements;

    Cluster(int n) {
      this.n = n;
      this.owner = new int[n];
      Arrays.fill(owner, -1);
    }

    Member join(int slot) {
      Member m = new Member(slot);
      members.add(m);
      members.sort((a, b) -> Integer.compare(a.slot, b.slot));
      return m;
    }

    void leave(Member m) {
      members.remove(m);
      for (int k = 0; k < n; k++) {
        if (owner[k] == m.slot) {
          owner[k] = -1;
        }
      }
    }

    /** One membership interval: each member runs LeaderGroup.rebalance's decisions once. */
    void round() {
      time.advance(INTERVAL);
      for (Member m : List.copyOf(members)) {
        m.round();
      }
    }

    boolean balanced() {
      int quota = Rebalancer.quota(n, members.size());
      for (Member m : members) {
        if (m.held().cardinality() > quota) {
          return false;
        }
      }
      return Arrays.stream(owner).noneMatch(o -> o < 0);
    }

    final class Member {
      final int slot;
      final Rebalancer r = new Rebalancer(n);
      long yielded;

      Member(int slot) {
        this.slot = slot;
      }

      BitSet held() {
        BitSet b = new BitSet(n);
        for (int k = 0; k < n; k++) {
          if (owner[k] == slot) {
            b.set(k);
          }
        }
        return b;
      }

      void round() {
        r.membership(members.size(), members.indexOf(this));
        tryKeys();
      }

      /** LeaderGroup.rebalanceWith, on the in-memory table. */
      private void tryKeys() {
        List<Integer> surplus = r.surplus(held());
        if (!surplus.isEmpty()) {
          for (int k : surplus) {
            owner[k] = -1;
          }
          yielded += surplus.size();
          return;
        }
        int budget = r.roundBudget(held().cardinality(), 256);
        while (budget > 0) {
          int missing = r.quota() - held().cardinality();
          if (missing <= 0) {
            return;
          }
          Rebalancer.Chunk chunk = r.nextChunk(held(), Math.min(budget, 1_000));
          if (chunk.isEmpty()) {
            return;
          }
          // One statement: try in order, stop after `missing` grants (the LIMIT).
          List<Integer> granted = new ArrayList<>();
          for (int p = 0; p < chunk.size() && granted.size() < missing; p++) {
            tries++;
            int k = chunk.keys().get(p);
            if (owner[k] < 0) {
              owner[k] = slot;
              granted.add(p);
            }
          }
          statements++;
          int tried = Rebalancer.tried(chunk, granted, missing);
          r.advance(chunk, tried);
          budget -= tried;
        }
      }
    }
  }

  private static Duration settle(Cluster c, int maxRounds) {
    long start = c.time.nanoTime();
    for (int i = 0; i < maxRounds && !c.balanced(); i++) {
      c.round();
    }
    assertThat(c.balanced()).as("balanced within %d rounds", maxRounds).isTrue();
    return c.time.elapsedSince(start);
  }

  @Test
  void coldStartOwnsEveryKeyInOneRound() {
    Cluster c = new Cluster(10_000);
    c.join(5);
    c.join(9);
    assertThat(settle(c, 5)).isLessThanOrEqualTo(INTERVAL.multipliedBy(1));
  }

  @Test
  void aJoiningMemberIsBalancedWithinTwoIntervals() {
    Cluster c = new Cluster(60);
    Cluster.Member a = c.join(10);
    settle(c, 3);
    assertThat(a.held().cardinality()).isEqualTo(60);
    c.join(20);
    // Round 1: a sees two members and yields 30 keys; b (later in the round) takes them.
    assertThat(settle(c, 10)).isLessThanOrEqualTo(INTERVAL.multipliedBy(2));
    assertThat(a.yielded).isEqualTo(30);
    c.join(30);
    assertThat(settle(c, 10)).isLessThanOrEqualTo(INTERVAL.multipliedBy(2));
    for (Cluster.Member m : c.members) {
      assertThat(m.held().cardinality()).isEqualTo(20);
    }
  }

  @Test
  void aCrashedMembersKeysAreTakenWithinOneInterval() {
    Cluster c = new Cluster(10_000);
    c.join(1);
    Cluster.Member b = c.join(2);
    c.join(3);
    settle(c, 10);
    c.leave(b); // kill -9: its session ends, its locks and its membership slot go with it
    assertThat(settle(c, 10)).isLessThanOrEqualTo(INTERVAL.multipliedBy(1));
  }

  @Test
  void aCrashedMemberOfTenIsTakenOverWithinOneIntervalAt10000Keys() {
    Cluster c = new Cluster(10_000);
    List<Cluster.Member> ms = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      ms.add(c.join(100 + i));
    }
    settle(c, 10);
    c.leave(ms.get(3));
    // The nine survivors sweep the ring once: the dead member's range is found in one round.
    assertThat(settle(c, 10)).isLessThanOrEqualTo(INTERVAL.multipliedBy(1));
  }

  @Test
  void aMemberJoiningTenAt10000KeysIsBalancedWithinTwoIntervals() {
    Cluster c = new Cluster(10_000);
    for (int i = 0; i < 10; i++) {
      c.join(100 + 10 * i);
    }
    settle(c, 10);
    c.join(155); // ranks in the middle
    assertThat(settle(c, 10)).isLessThanOrEqualTo(INTERVAL.multipliedBy(2));
  }

  @Test
  void keysLostWithoutAMembershipChangeAreFoundInOneSweep() {
    Cluster c = new Cluster(10_000);
    Cluster.Member a = c.join(1);
    c.join(2);
    c.join(3);
    settle(c, 10);
    // One of a's sessions ends: 800 of its keys go free, the membership stays the same.
    int freed = 0;
    for (int k = 0; k < c.n && freed < 800; k++) {
      if (c.owner[k] == a.slot) {
        c.owner[k] = -1;
        freed++;
      }
    }
    assertThat(settle(c, 10)).isLessThanOrEqualTo(INTERVAL.multipliedBy(1));
  }

  @Test
  void atRestAMemberShortOfItsCeilingTriesAtMostTheFloorPerRoundInOneStatement() {
    Cluster c = new Cluster(10_001);
    c.join(1);
    c.join(2);
    c.join(3);
    settle(c, 10);
    for (int i = 0; i < Rebalancer.SWEEP_ROUNDS; i++) {
      c.round(); // the sweeps that follow the last membership change
    }
    long tries = c.tries;
    long statements = c.statements;
    for (int i = 0; i < 10; i++) {
      c.round();
    }
    // 10,001 = 3,334 + 3,334 + 3,333: one member is one key below its quota and keeps looking,
    // at most 256 tries in one statement per round; nothing moves.
    assertThat(c.tries - tries).isLessThanOrEqualTo(10L * 256);
    assertThat(c.statements - statements).isLessThanOrEqualTo(10L);
    assertThat(c.balanced()).isTrue();
  }

  private static List<Integer> range(int from, int to) {
    List<Integer> out = new ArrayList<>();
    for (int i = from; i < to; i++) {
      out.add(i);
    }
    return out;
  }
}
