package dev.retsu.lock.internal.group;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Which notices on a group's channel count: only a member session's, by the pid the server
 * attaches, whatever the payload says. Without a database: the member sessions are a set the test
 * controls, and time is a counter.
 */
class NoticeSendersTest {

  private static final int OWN = 100;
  private static final long GAP = NoticeSenders.SENDER_READ_GAP.toNanos();

  private final AtomicLong now = new AtomicLong(1_000_000_000L);
  private final List<String> believed = new ArrayList<>();
  private final NoticeSenders senders = new NoticeSenders(now::get, "[test]", believed::add);
  private final AtomicInteger reads = new AtomicInteger();

  private NoticeSenders.MemberSessions members(Integer... pids) {
    return () -> {
      reads.incrementAndGet();
      return Set.of(pids);
    };
  }

  @Test
  void aNoticeFromThisMembersOwnSessionIsBelievedAtOnce() throws SQLException {
    assertThat(senders.heard(OWN, "joined 3", OWN)).isTrue();
    assertThat(believed).containsExactly("joined 3");
    assertThat(senders.look(members())).isFalse();
    assertThat(reads).hasValue(0); // nothing waited: no read
  }

  @Test
  void aNoticeFromAnUnknownPidWaitsForTheReadAndCountsOnlyFromAMember() throws SQLException {
    assertThat(senders.heard(7, "gone 1", OWN)).isFalse();
    assertThat(senders.heard(8, "yielded 4 1000", OWN)).isFalse();
    assertThat(believed).isEmpty();
    assertThat(senders.look(members(7))).isTrue();
    assertThat(believed).containsExactly("gone 1");
    assertThat(senders.ignored()).isEqualTo(1);
    // now known: the member's next notice counts at once, the other pid's waits again
    assertThat(senders.heard(7, "left 1", OWN)).isTrue();
    assertThat(senders.heard(8, "gone 2", OWN)).isFalse();
    assertThat(believed).containsExactly("gone 1", "left 1");
  }

  @Test
  void theMemberSessionsAreReadAtMostOncePerGap() throws SQLException {
    senders.heard(7, "gone 1", OWN);
    senders.look(members());
    senders.heard(9, "gone 2", OWN);
    assertThat(senders.look(members(9))).as("within the gap: not read again").isFalse();
    assertThat(reads).hasValue(1);
    now.addAndGet(GAP);
    assertThat(senders.look(members(9))).isTrue();
    assertThat(reads).hasValue(2);
    assertThat(believed).containsExactly("gone 2");
    assertThat(senders.ignored()).isEqualTo(1);
  }

  @Test
  void aMembershipChangeForcesARereadEvenWithNothingWaiting() throws SQLException {
    senders.heard(7, "gone 1", OWN);
    senders.look(members(7));
    now.addAndGet(GAP);
    assertThat(senders.look(members())).as("nothing waits, nothing changed").isFalse();
    assertThat(reads).hasValue(1);
    senders.markStale();
    senders.look(members());
    assertThat(reads).hasValue(2);
    // pid 7 is no member any more: its notice waits, then is ignored
    assertThat(senders.heard(7, "gone 3", OWN)).isFalse();
  }

  @Test
  void aFloodFromForeignPidsIsBoundedAndCounted() throws SQLException {
    int pids = NoticeSenders.MAX_UNKNOWN_SENDERS + 10;
    int perPid = NoticeSenders.MAX_NOTICES_PER_SENDER + 4;
    for (int pid = 1000; pid < 1000 + pids; pid++) {
      for (int i = 0; i < perPid; i++) {
        senders.heard(pid, "yielded 0 300000", OWN);
      }
    }
    long overflow =
        (long) NoticeSenders.MAX_UNKNOWN_SENDERS * 4 + 10L * perPid; // dropped without waiting
    assertThat(senders.ignored()).isEqualTo(overflow);
    senders.look(members());
    assertThat(senders.ignored()).isEqualTo((long) pids * perPid);
    assertThat(believed).isEmpty();
  }

  @Test
  void aNewSessionForgetsWhoWasAMember() throws SQLException {
    senders.heard(7, "gone 1", OWN);
    senders.look(members(7));
    senders.reset();
    assertThat(senders.heard(7, "gone 2", OWN)).as("not known on the new session").isFalse();
    assertThat(senders.look(members(7))).isTrue();
    assertThat(believed).containsExactly("gone 1", "gone 2");
  }
}
