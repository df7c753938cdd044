package dev.retsu.lock.internal.group;

import dev.retsu.lock.LockKey;
import dev.retsu.lock.fakes.FakeTime;
import dev.retsu.lock.internal.session.ServerBounds;
import dev.retsu.lock.internal.session.SessionOpener;
import dev.retsu.lock.internal.term.TermOptions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * One member of a group on stub slots and simulated time: its shared state, its slots, and the log
 * of the statements they were sent. No data source: nothing here may reach a database.
 */
final class StubGroup {

  /** Between membership reads; the rejoining window adds heartbeat and reconnect to it. */
  static final Duration MEMBERSHIP_INTERVAL = Duration.ofSeconds(1);

  static final Duration HEARTBEAT = Duration.ofSeconds(1);
  static final Duration RECONNECT = Duration.ofSeconds(1);

  /** The round trip and close timeouts: a slot's answer is awaited 3 × this, on the real clock. */
  static final Duration TIMEOUT = Duration.ofMillis(20);

  final FakeTime time = new FakeTime();
  final List<LockKey> keys;
  final GroupCore core;
  final List<StubSlot.Try> log = new CopyOnWriteArrayList<>();
  final List<StubSlot> slots = new ArrayList<>();

  StubGroup(int keyCount, int sessions, int batchSize) {
    keys = GroupSettings.partitions("t", keyCount);
    TermOptions term =
        new TermOptions(
            null,
            "unit",
            Duration.ofSeconds(1),
            Duration.ofMillis(500),
            HEARTBEAT,
            Duration.ofSeconds(3),
            new ServerBounds(Duration.ofSeconds(5), Duration.ofSeconds(2), 3, Duration.ZERO),
            TIMEOUT,
            TIMEOUT,
            true,
            List.of(),
            time,
            null);
    SessionOpener.Spec spec =
        new SessionOpener.Spec(
            null,
            new Membership("g").groupKey(),
            "unit",
            "[group=g, candidate=unit]",
            "retsu-lock:unit",
            Map.of(),
            TIMEOUT,
            HEARTBEAT,
            term.selfFenceAfter(),
            time);
    core =
        new GroupCore(
            new GroupSettings(
                term,
                spec,
                "g",
                keys,
                sessions,
                batchSize,
                MEMBERSHIP_INTERVAL,
                RECONNECT,
                Duration.ZERO));
    for (int i = 0; i < sessions; i++) {
      slots.add(new StubSlot(i, log));
    }
  }

  LockKey key(int i) {
    return keys.get(i);
  }

  List<LockKey> keys(int from, int to) {
    return keys.subList(from, to);
  }

  /** The membership this member reads: {@code members} slots, its own {@code mine} among them. */
  void membership(int mine, long... members) {
    slots.get(0).membershipSlot = mine;
    slots.get(0).members = members;
  }

  /** Every key tried, in the order the statements were sent. */
  List<LockKey> tried() {
    List<LockKey> out = new ArrayList<>();
    for (StubSlot.Try t : log) {
      out.addAll(t.keys());
    }
    return out;
  }
}
