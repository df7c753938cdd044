package dev.retsu.lock.internal.watch;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.FakeTime;
import dev.retsu.lock.FencingToken;
import dev.retsu.lock.LeaderChange;
import dev.retsu.lock.LeaderInfo;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.internal.session.Notices;
import dev.retsu.lock.internal.session.PgSession;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The watch's delivery rules without a database: the watcher hands reads and notifications in, and
 * what reaches the listeners is asserted. A POLL or group grant takes the key in one statement and
 * its token in the next; a read between the two must not deliver the term twice.
 */
class WatchedKeysTest {

  private static final LockKey KEY = LockKey.of(4242L);
  private static final int PID = 777;
  private static final FencingToken TOKEN = new FencingToken(1, 5000, 900);

  private final FakeTime time = new FakeTime();
  private final WatchedKeys keys = new WatchedKeys("[test]", time);
  private final List<LeaderChange> heard = new ArrayList<>();

  @BeforeEach
  void watch() {
    keys.add(KEY, heard::add);
    assertThat(keys.takePendingReads()).containsExactly(KEY);
  }

  private static LeaderInfo holder(Optional<FencingToken> token, boolean foreign) {
    return new LeaderInfo(
        KEY,
        foreign ? "" : "solo",
        PID,
        "db",
        token,
        OptionalLong.empty(),
        Optional.empty(),
        Optional.empty(),
        Optional.empty(),
        foreign);
  }

  private void acquiredNotice() {
    String payload = "acquired " + Notices.keyId(KEY) + " " + PID + " " + TOKEN + " solo";
    keys.notices(List.of(new PgSession.Note(Notices.CHANNEL, PID, payload)));
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
}
