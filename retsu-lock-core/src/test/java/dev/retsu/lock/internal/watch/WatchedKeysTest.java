package dev.retsu.lock.internal.watch;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.FencingToken;
import dev.retsu.lock.LeaderChange;
import dev.retsu.lock.LeaderChange.Cause;
import dev.retsu.lock.LeaderChangeListener;
import dev.retsu.lock.LeaderInfo;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.fakes.FakeTime;
import dev.retsu.lock.internal.session.Notices;
import dev.retsu.lock.internal.session.PgSession;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The watch's delivery rules without a database: the watcher hands reads ({@code pg_locks}),
 * notifications and checks ({@code pg_stat_activity}) in, in the orders a real session can show
 * them, and what reaches the listeners is asserted. The rules: a notice is a hint that asks for a
 * read, never a fact (except a leader's own {@code released}); each change goes out once, in token
 * order; a term older than one delivered is never delivered; what a lost notice hid is found by the
 * next check or by the read after a reconnect.
 */
class WatchedKeysTest {

  private static final LockKey KEY = LockKey.of(4242L);
  private static final LockKey OTHER = LockKey.of(4343L);
  private static final int PID = 777;
  private static final int NEXT_PID = 778;
  private static final FencingToken TOKEN = new FencingToken(1, 5000, 900);
  private static final FencingToken NEWER = new FencingToken(1, 6000, 901);

  private final FakeTime time = new FakeTime();
  private final WatchedKeys keys = new WatchedKeys("[test]", time);
  private final List<LeaderChange> heard = new ArrayList<>();

  @BeforeEach
  void watch() {
    keys.add(KEY, heard::add);
    assertThat(keys.takePendingReads()).containsExactly(KEY);
  }

  private static LeaderInfo holder(Optional<FencingToken> token, boolean foreign) {
    return holder(PID, token, foreign);
  }

  private static LeaderInfo holder(int pid, Optional<FencingToken> token, boolean foreign) {
    return new LeaderInfo(
        KEY,
        foreign ? "" : "solo",
        pid,
        "db",
        token,
        OptionalLong.empty(),
        Optional.empty(),
        Optional.empty(),
        Optional.empty(),
        foreign);
  }

  private static LeaderInfo leader(int pid, FencingToken token) {
    return holder(pid, Optional.of(token), false);
  }

  private void acquiredNotice() {
    acquired(PID, PID, TOKEN);
  }

  /** An {@code acquired} notice naming {@code pid}, sent by the session of {@code sender}. */
  private void acquired(int sender, int pid, FencingToken token) {
    String payload = "acquired " + Notices.keyId(KEY) + " " + pid + " " + token + " solo";
    keys.notices(List.of(new PgSession.Note(Notices.CHANNEL, sender, payload)));
  }

  /** A {@code released} notice naming {@code pid}, sent by the session of {@code sender}. */
  private void released(int sender, int pid, FencingToken token) {
    keys.notices(
        List.of(new PgSession.Note(Notices.CHANNEL, sender, Notices.released(KEY, pid, token))));
  }

  private void read(LeaderInfo found) {
    keys.read(List.of(KEY), found == null ? Map.of() : Map.of(KEY, found));
  }

  /** The key's first read found {@code pid} leading under {@code token}; heard is cleared. */
  private void leading(int pid, FencingToken token) {
    read(leader(pid, token));
    assertThat(heard).hasSize(1);
    heard.clear();
  }

  private LeaderChange only() {
    assertThat(heard).hasSize(1);
    return heard.get(0);
  }

  @Test
  void aGrantReadBeforeItsTokenIsShownIsHeardOnceWithItsToken() {
    keys.read(List.of(KEY), Map.of(KEY, holder(Optional.empty(), false)));
    assertThat(heard).isEmpty();
    assertThat(keys.leader(KEY)).isEmpty();

    acquiredNotice();
    assertThat(keys.takePendingReads()).containsExactly(KEY);
    keys.read(List.of(KEY), Map.of(KEY, holder(Optional.of(TOKEN), false)));

    assertThat(heard).hasSize(1);
    assertThat(heard.get(0).cause()).isEqualTo(LeaderChange.Cause.ACQUIRED);
    assertThat(heard.get(0).leader().orElseThrow().token()).contains(TOKEN);
  }

  @Test
  void aHolderThatNeverShowsATokenIsHeardOnceItsGraceHasPassed() {
    keys.read(List.of(KEY), Map.of(KEY, holder(Optional.empty(), false)));
    assertThat(keys.takePendingReads()).isEmpty();
    time.nanos.addAndGet(WatchedKeys.TOKENLESS_GRACE_NANOS - 1);
    assertThat(keys.takePendingReads()).isEmpty();
    time.nanos.addAndGet(1);
    assertThat(keys.takePendingReads()).containsExactly(KEY);

    keys.read(List.of(KEY), Map.of(KEY, holder(Optional.empty(), false)));
    assertThat(heard).hasSize(1);
    assertThat(heard.get(0).leader().orElseThrow().pid()).isEqualTo(PID);
    assertThat(heard.get(0).leader().orElseThrow().token()).isEmpty();
    assertThat(keys.takePendingReads()).isEmpty();
  }

  @Test
  void aForeignHolderAndNobodyAreHeardAtOnce() {
    keys.read(List.of(KEY), Map.of());
    assertThat(heard).hasSize(1);
    assertThat(heard.get(0).leader()).isEmpty();

    keys.read(List.of(KEY), Map.of(KEY, holder(Optional.empty(), true)));
    assertThat(heard).hasSize(2);
    assertThat(heard.get(1).leader().orElseThrow().foreign()).isTrue();
  }

  @Test
  void anAcquiredNoticeIsOnlyAHintAndTheReadItAsksForIsWhatIsHeard() {
    leading(PID, TOKEN);
    acquired(NEXT_PID, NEXT_PID, NEWER);
    assertThat(heard).as("a notice alone delivers nothing").isEmpty();
    assertThat(keys.leader(KEY).orElseThrow().pid()).isEqualTo(PID);
    assertThat(keys.takePendingReads()).containsExactly(KEY);

    read(leader(NEXT_PID, NEWER));
    LeaderChange c = only();
    assertThat(c.cause()).isEqualTo(Cause.ACQUIRED);
    assertThat(c.leader().orElseThrow().pid()).isEqualTo(NEXT_PID);
    assertThat(c.leader().orElseThrow().acquiredAt())
        .as("seen when the read confirmed the notice")
        .contains(Instant.ofEpochMilli(time.wallMillis()));
    assertThat(keys.leader(KEY)).isEqualTo(c.leader());
  }

  @Test
  void duplicateNoticesAskForOneReadAndTheTermIsHeardOnce() {
    leading(PID, TOKEN);
    acquired(NEXT_PID, NEXT_PID, NEWER);
    acquired(NEXT_PID, NEXT_PID, NEWER);
    assertThat(keys.takePendingReads()).as("reads are coalesced per key").containsExactly(KEY);
    read(leader(NEXT_PID, NEWER));
    assertThat(only().cause()).isEqualTo(Cause.ACQUIRED);

    acquired(NEXT_PID, NEXT_PID, NEWER); // the same notice, delivered late once more
    assertThat(keys.takePendingReads()).as("no read for a term already delivered").isEmpty();
    read(leader(NEXT_PID, NEWER)); // and a read that shows the same term again
    assertThat(heard).hasSize(1);
  }

  @Test
  void aTermReadBeforeItsNoticeIsHeardOnceAndTheNoticeAfterwardsAsksForNothing() {
    leading(PID, TOKEN);
    // The watcher's periodic or first read showed the successor before its notice was taken.
    read(leader(NEXT_PID, NEWER));
    assertThat(only().cause()).isEqualTo(Cause.READ);
    acquired(NEXT_PID, NEXT_PID, NEWER);
    assertThat(keys.takePendingReads()).isEmpty();
    assertThat(heard).hasSize(1);
  }

  @Test
  void aReadThatShowsATermOlderThanOneDeliveredIsNeverHeard() {
    leading(NEXT_PID, NEWER);
    read(leader(PID, TOKEN)); // a read answered before the newer grant was applied
    assertThat(heard).isEmpty();
    assertThat(keys.leader(KEY).orElseThrow().token()).contains(NEWER);

    read(null); // nobody, then the old term again: still older than the highest delivered
    assertThat(only().leader()).isEmpty();
    read(leader(PID, TOKEN));
    assertThat(heard).hasSize(1);
    assertThat(keys.leader(KEY)).isEmpty();
  }

  @Test
  void anAcquiredNoticeOfAnOlderTermAsksForNoRead() {
    leading(NEXT_PID, NEWER);
    acquired(PID, PID, TOKEN);
    assertThat(keys.takePendingReads()).isEmpty();
    assertThat(heard).isEmpty();
  }

  @Test
  void theLeadersOwnReleasedNoticeIsNobodyAtOnce() {
    leading(PID, TOKEN);
    released(PID, PID, TOKEN);
    LeaderChange c = only();
    assertThat(c.cause()).isEqualTo(Cause.RELEASED);
    assertThat(c.leader()).isEmpty();
    assertThat(keys.leader(KEY)).isEmpty();
    assertThat(keys.takePendingReads()).as("no read: the leader said it itself").isEmpty();
  }

  @Test
  void aNoticeSentByAnotherSessionThanTheOneItNamesIsIgnored() {
    leading(PID, TOKEN);
    released(NEXT_PID, PID, TOKEN); // any role can notify: this one names the leader's pid
    acquired(NEXT_PID, 999, NEWER);
    assertThat(heard).isEmpty();
    assertThat(keys.leader(KEY).orElseThrow().pid()).isEqualTo(PID);
    assertThat(keys.takePendingReads()).isEmpty();
  }

  @Test
  void aLateReleasedOfThePreviousTermDoesNotEndTheNewOne() {
    leading(PID, TOKEN);
    read(leader(NEXT_PID, NEWER)); // the successor is already delivered
    heard.clear();
    released(PID, PID, TOKEN); // the old leader's notice, taken late
    assertThat(heard).as("not the current leader's: only a hint").isEmpty();
    assertThat(keys.takePendingReads()).containsExactly(KEY);
    read(leader(NEXT_PID, NEWER));
    assertThat(heard).isEmpty();
    assertThat(keys.leader(KEY).orElseThrow().pid()).isEqualTo(NEXT_PID);
  }

  @Test
  void aReleasedHintConfirmedByAReadIsHeardAsReleasedAndOneThatIsNotAsARead() {
    leading(PID, TOKEN);
    read(leader(NEXT_PID, NEWER));
    heard.clear();
    released(PID, PID, TOKEN);
    keys.takePendingReads();
    read(null); // the successor is gone too by the time of the read
    assertThat(only().cause()).isEqualTo(Cause.RELEASED);

    heard.clear();
    released(NEXT_PID, NEXT_PID, NEWER); // nobody is current: a hint
    keys.takePendingReads();
    FencingToken third = new FencingToken(1, 7000, 902);
    read(leader(PID, third)); // someone new holds it: the hint's cause does not fit
    assertThat(only().cause()).isEqualTo(Cause.READ);
  }

  @Test
  void aLeaderWhoseSessionEndedWithoutANoticeIsEndedByTheCheck() {
    leading(PID, TOKEN);
    assertThat(keys.leaderPids()).containsExactly(PID);
    keys.check(Set.of(PID), Map.of(PID, Notices.termName("retsu-lock:solo", TOKEN)));
    assertThat(heard).as("alive under its token").isEmpty();

    keys.check(Set.of(PID), Map.of()); // the crash's notice never came: the session is gone
    LeaderChange c = only();
    assertThat(c.cause()).isEqualTo(Cause.ENDED);
    assertThat(c.leader()).isEmpty();
    assertThat(keys.leaderPids()).isEmpty();
  }

  @Test
  void aLeaderWhoseReleasedNoticeWasLostIsEndedWhenItsSessionNoLongerShowsTheToken() {
    leading(PID, TOKEN);
    keys.check(Set.of(PID), Map.of(PID, Notices.termName("retsu-lock:solo", NEWER)));
    assertThat(heard).as("a newer term on the same session still holds").isEmpty();
    keys.check(Set.of(PID), Map.of(PID, "retsu-lock:solo")); // back in the pool, no term
    assertThat(only().cause()).isEqualTo(Cause.ENDED);
  }

  @Test
  void aCheckOfOtherPidsLeavesTheLeaderAlone() {
    leading(PID, TOKEN);
    keys.check(Set.of(NEXT_PID), Map.of());
    assertThat(heard).isEmpty();
    assertThat(keys.leader(KEY)).isPresent();
  }

  @Test
  void aChangeMissedWhileTheSessionWasAwayIsHeardAtTheReadAfterTheReconnect() {
    keys.add(OTHER, heard::add);
    keys.takePendingReads();
    keys.read(List.of(KEY, OTHER), Map.of(KEY, leader(PID, TOKEN)));
    assertThat(heard).hasSize(2);
    heard.clear();

    // Away: KEY's leader handed over to NEXT_PID and the notices went to nobody.
    keys.readAllAgain();
    assertThat(keys.takePendingReads()).containsExactlyInAnyOrder(KEY, OTHER);
    keys.read(List.of(KEY, OTHER), Map.of(KEY, leader(NEXT_PID, NEWER)));
    LeaderChange c = only();
    assertThat(c.key()).isEqualTo(KEY);
    assertThat(c.cause()).isEqualTo(Cause.READ);
    assertThat(c.leader().orElseThrow().pid()).isEqualTo(NEXT_PID);
    assertThat(keys.takePendingReads()).isEmpty();
  }

  @Test
  void aListenerAddedLaterHearsTheCurrentLeaderAtOnceAndOneThatThrowsStopsNoOther() {
    leading(PID, TOKEN);
    List<LeaderChange> late = new ArrayList<>();
    LeaderChangeListener throwing =
        change -> {
          throw new IllegalStateException("listener bug");
        };
    keys.add(KEY, throwing);
    keys.add(KEY, late::add);
    assertThat(late).hasSize(1);
    assertThat(late.get(0).cause()).isEqualTo(Cause.READ);
    assertThat(late.get(0).leader().orElseThrow().pid()).isEqualTo(PID);
    assertThat(keys.takePendingReads()).as("known: no read").isEmpty();

    released(PID, PID, TOKEN);
    assertThat(heard).hasSize(1);
    assertThat(late).hasSize(2);
  }

  @Test
  void aKeyWhoseLastListenerLeftIsForgottenAndItsNoticesIgnored() {
    WatchedKeys alone = new WatchedKeys("[test]", time);
    List<LeaderChange> told = new ArrayList<>();
    LeaderChangeListener first = told::add;
    LeaderChangeListener second = told::add;
    alone.add(OTHER, first);
    alone.add(OTHER, second);
    assertThat(alone.takePendingReads()).containsExactly(OTHER);
    alone.read(List.of(OTHER), Map.of(OTHER, leader(PID, TOKEN)));
    assertThat(told).hasSize(2);

    alone.remove(OTHER, first);
    assertThat(alone.all()).as("one listener left").containsExactly(OTHER);
    assertThat(alone.leader(OTHER)).isPresent();
    alone.remove(OTHER, second);
    assertThat(alone.all()).isEmpty();
    assertThat(alone.leader(OTHER)).isEmpty();
    assertThat(alone.leaderPids()).isEmpty();

    alone.notices(
        List.of(
            new PgSession.Note(
                Notices.CHANNEL,
                NEXT_PID,
                "acquired " + Notices.keyId(OTHER) + " " + NEXT_PID + " " + NEWER + " solo")));
    alone.readAllAgain();
    assertThat(alone.takePendingReads()).isEmpty();
    assertThat(told).hasSize(2);
  }

  @Test
  void notificationsOnAnotherChannelOrNotOursAreIgnored() {
    leading(PID, TOKEN);
    String payload = "acquired " + Notices.keyId(KEY) + " " + NEXT_PID + " " + NEWER + " solo";
    keys.notices(
        List.of(
            new PgSession.Note("other_channel", NEXT_PID, payload),
            new PgSession.Note(Notices.CHANNEL, NEXT_PID, "acquired garbage"),
            new PgSession.Note(Notices.CHANNEL, NEXT_PID, null)));
    assertThat(keys.takePendingReads()).isEmpty();
    assertThat(heard).isEmpty();
  }
}
