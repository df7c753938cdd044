package dev.retsu.lock.ha;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retsu.lock.testing.TermChecker.Event;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The harness's pure parts, on made-up inputs: settings validation, the configuration files, the
 * reading of Patroni's {@code /cluster} answer, the partition's rules, the fence judge and the
 * round figures. No cluster (these run in every build).
 */
class HaHarnessTest {

  private static final ClusterConfig.NodeSpec NODE =
      new ClusterConfig.NodeSpec(
          "pg2", 25432, 28002, 23792, Path.of("/tmp/x/pg2/data"), Path.of("/tmp/x/s2"));

  @Test
  void settingsRefuseATtlPatroniCannotKeep() {
    assertThatThrownBy(() -> new HaSettings(3, 8, 1, 4, 500))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("ttl must be at least loopWait + 2 * retryTimeout (9 s), but was 8");
    assertThatThrownBy(() -> new HaSettings(4, 30, 10, 10, 500))
        .hasMessage("nodes must be 2 or 3, but was 4");
    assertThat(HaSettings.SUITE.ttl()).isEqualTo(10);
  }

  @Test
  void patroniConfigPutsEachNodeOnItsOwnPortsAndTheSuiteTiming() {
    String yaml = ClusterConfig.patroni(NODE, HaSettings.SUITE);
    assertThat(yaml)
        .contains("name: pg2")
        .contains("listen: 127.0.0.1:28002")
        .contains("hosts: 127.0.0.1:23792")
        .contains("use_proxies: true")
        .contains("ttl: 10")
        .contains("loop_wait: 1")
        .contains("retry_timeout: 4")
        .contains("listen: 127.0.0.1,127.0.1.1:25432")
        .contains("connect_address: 127.0.0.1:25432")
        .contains("use_pg_rewind: true")
        .contains("data_dir: /tmp/x/pg2/data");
    String haproxy = ClusterConfig.haproxy(5000, List.of(NODE), HaSettings.SUITE);
    assertThat(haproxy)
        .contains("bind 127.0.0.1:5000")
        .contains("option httpchk OPTIONS /primary")
        .contains("inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions")
        .contains("server pg2 127.0.0.1:25432 maxconn 100 check port 28002");
  }

  @Test
  void readsTheMembersOfAPatroniClusterAnswer() {
    String json =
        "{\"members\": [{\"name\": \"pg1\", \"role\": \"leader\", \"state\": \"running\","
            + " \"api_url\": \"http://127.0.0.1:28001/patroni\", \"host\": \"127.0.0.1\","
            + " \"port\": 25431, \"timeline\": 4}, {\"name\": \"pg2\", \"role\":"
            + " \"sync_standby\", \"state\": \"running\", \"host\": \"127.0.0.1\", \"port\":"
            + " 25432, \"timeline\": 4, \"lag\": 0}, {\"name\": \"pg3\", \"role\": \"replica\","
            + " \"state\": \"stopping\", \"host\": \"127.0.0.1\", \"port\": 25433, \"timeline\":"
            + " null, \"lag\": \"unknown\"}]}";
    List<ClusterConfig.Member> m = ClusterConfig.members(json);
    assertThat(m)
        .containsExactly(
            new ClusterConfig.Member("pg1", "leader", "running", 4, -1),
            new ClusterConfig.Member("pg2", "sync_standby", "running", 4, 0),
            new ClusterConfig.Member("pg3", "replica", "stopping", -1, -1));
    assertThat(m.get(0).leader()).isTrue();
    assertThat(m.get(1).leader()).isFalse();
  }

  @Test
  void aPartitionDropsTheNodesPortsBothWaysOnTheClusterAddressOnly() {
    assertThat(Partition.script("retsu_ha_1", List.of(25432, 28002, 23792)))
        .isEqualTo(
            "table inet retsu_ha_1 {\n"
                + "  chain out { type filter hook output priority -10; policy accept;\n"
                + "    ip daddr 127.0.0.1 tcp dport { 25432, 28002, 23792 } drop\n"
                + "    ip saddr 127.0.0.1 tcp sport { 25432, 28002, 23792 } drop\n"
                + "  }\n}\n");
    assertThatThrownBy(() -> new Partition("Bad-Name"))
        .hasMessage("table must be lowercase letters, digits and underscores, but was Bad-Name");
  }

  private static Event e(long ms, String member, String kind, String... fields) {
    return new Event(ms * 1_000_000L, member, kind, List.of(fields));
  }

  private static Event effect(
      long endMs, String member, String term, String token, String out, long startMs) {
    return e(endMs, member, "EFFECT", term, token, out, Long.toString(startMs * 1_000_000L));
  }

  @Test
  void theFenceJudgeFlagsAnOlderTokenAcceptedAfterANewerOne() {
    List<Event> events = new ArrayList<>();
    events.add(effect(100, "c1", "1", "A1A0C700", "ACCEPTED", 90));
    events.add(effect(200, "c2", "1", "A2A0C650", "ACCEPTED", 190));
    events.add(effect(300, "probe3", "1", "A1A0C720", "REJECTED", 290)); // the fence held
    assertThat(FenceJudge.staleAccepted(FenceJudge.effects(events))).isEmpty();
    assertThat(FenceJudge.rejected(FenceJudge.effects(events))).isEqualTo(1);

    // the fence lost A2A0C650 (a failover threw it away) and accepted an older token after it
    events.add(effect(400, "probe3", "1", "A1A0C721", "ACCEPTED", 390));
    assertThat(FenceJudge.staleAccepted(FenceJudge.effects(events)))
        .singleElement()
        .asString()
        .startsWith(
            "STALE EFFECT ACCEPTED: probe3#1 with token A1A0C721, begun 190.0 ms after c2#1");
    // writes that overlap in time are not ordered: neither is stale
    List<Event> overlapping =
        List.of(
            effect(300, "c1", "1", "A1A0C700", "ACCEPTED", 100),
            effect(250, "c2", "1", "A2A0C650", "ACCEPTED", 200));
    assertThat(FenceJudge.staleAccepted(FenceJudge.effects(overlapping))).isEmpty();
  }

  @Test
  void theClustersHistoryWentBackWhenATermStartsUnderAnOlderTokenThanAnEarlierOne() {
    List<Event> forward =
        List.of(
            new Event(100, "c1", "ACQUIRED", List.of("1", "B16A0D1400")),
            new Event(200, "c2", "ACQUIRED", List.of("1", "B17A0D1427")),
            new Event(300, "c1", "ACQUIRED", List.of("2", "B17A0D1500")));
    assertThat(FenceJudge.historyWentBack(forward)).isEmpty();
    List<Event> back = new ArrayList<>(forward);
    back.add(new Event(400, "probe3", "ACQUIRED", List.of("1", "B16A0D1443")));
    assertThat(FenceJudge.historyWentBack(back))
        .hasValue("probe3#1 started under B16A0D1443 after c1#2 had B17A0D1500");
  }

  @Test
  void aRoundMeasuresPromotionTakeoverAndTheSplitBrainFromTheFault() {
    long f = 1000;
    List<NodeMonitor.Sample> samples =
        List.of(
            new NodeMonitor.Sample(ms(1100), "pg1", NodeMonitor.State.PRIMARY, 3, ""),
            new NodeMonitor.Sample(ms(9000), "pg2", NodeMonitor.State.PRIMARY, 4, ""),
            new NodeMonitor.Sample(ms(12000), "pg1", NodeMonitor.State.PRIMARY, 3, ""),
            new NodeMonitor.Sample(ms(12500), "pg1", NodeMonitor.State.DOWN, 0, "refused"));
    List<Event> events =
        List.of(
            e(500, "c1", "ACQUIRED", "2", "A3A0C900", "111"),
            e(600, "c1", "CHECK", "2", "A3A0C900"),
            e(1500, "c1", "LOST", "2", "SESSION_LOST"),
            e(2000, "probe3", "ACQUIRED", "1", "A3A0C950", "222"),
            e(2100, "probe3", "CHECK", "1", "A3A0C950"),
            e(9500, "c2", "ACQUIRED", "5", "A4A0C930", "333"),
            e(9600, "c2", "CHECK", "5", "A4A0C930"),
            e(11000, "probe3", "CHECK", "1", "A3A0C950"),
            effect(11050, "probe3", "1", "A3A0C950", "REJECTED", 11010),
            e(12600, "probe3", "LOST", "1", "SESSION_LOST"));
    Round r =
        Round.read(
            new Round.Start("s", 1, ms(f), "pg1", 3, "c1", "2", "A3A0C900"),
            samples,
            events,
            ms(20000));
    assertThat(r.figures())
        .containsEntry("new_primary", "pg2")
        .containsEntry("promoted_ms", "8000")
        .containsEntry("old_primary_last_ms", "11000")
        .containsEntry("two_primaries_ms", "3000")
        .containsEntry("takeover_ms", "8600")
        .containsEntry("old_leader_end", "SESSION_LOST")
        .containsEntry("old_leader_lost_ms", "500")
        .containsEntry("old_leader_last_check_ms", "none")
        .containsEntry("acting_overlap_ms", "1500")
        .containsEntry("overlapping_terms", "probe3#1")
        .containsEntry("token_newer", "true")
        .containsEntry("xid_went_back", "false")
        .containsEntry("effects_rejected", "1");
    assertThatThrownBy(() -> r.put("nonsense", "1"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("but was nonsense");
  }

  @Test
  void summariesGiveMinMedianMaxForNumbersAndCountsForTexts() {
    List<Round> rounds = new ArrayList<>();
    for (String v : List.of("300", "100", "200", "400")) {
      Round r = new Round("s", rounds.size() + 1, new java.util.LinkedHashMap<>());
      for (String c : Round.COLUMNS) {
        r.figures().put(c, "");
      }
      r.put("promoted_ms", v);
      r.put("old_leader_end", rounds.size() < 3 ? "SESSION_LOST" : "SELF_FENCED");
      rounds.add(r);
    }
    assertThat(HaResults.column(rounds, "promoted_ms")).isEqualTo("100 / 250 / 400 (4)");
    assertThat(HaResults.column(rounds, "old_leader_end"))
        .isEqualTo("SELF_FENCED ×1, SESSION_LOST ×3");
    assertThat(HaResults.column(rounds, "takeover_ms")).isEqualTo("-");
  }

  private static long ms(long ms) {
    return ms * 1_000_000L;
  }
}
