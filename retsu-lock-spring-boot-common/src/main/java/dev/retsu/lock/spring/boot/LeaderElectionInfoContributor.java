package dev.retsu.lock.spring.boot;

import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.actuate.info.Info;
import org.springframework.boot.actuate.info.InfoContributor;

/**
 * Adds {@code leaderElection} to {@code /actuator/info}: each leader's key, candidate id and role
 * right now. No database I/O.
 */
public final class LeaderElectionInfoContributor implements InfoContributor {

  private final RetsuLeaders leaders;

  /**
   * Creates the contributor.
   *
   * @param leaders the leaders it reports
   */
  public LeaderElectionInfoContributor(RetsuLeaders leaders) {
    this.leaders = leaders;
  }

  @Override
  public void contribute(Info.Builder builder) {
    Map<String, Object> all = new LinkedHashMap<>();
    for (RetsuLeader l : leaders.all().values()) {
      Map<String, Object> d = new LinkedHashMap<>();
      d.put("key", l.key().toString());
      d.put("candidate", l.candidateId());
      d.put("role", l.status());
      all.put(l.name(), d);
    }
    Map<String, Object> groups = new LinkedHashMap<>();
    for (RetsuLeaderGroup g : leaders.groups().values()) {
      Map<String, Object> d = new LinkedHashMap<>();
      d.put("candidate", g.group().candidateId());
      d.put("role", g.status());
      d.put("keysHeld", g.group().heldCount());
      groups.put(g.name(), d);
    }
    builder.withDetail(
        "leaderElection",
        groups.isEmpty() ? Map.of("leaders", all) : Map.of("leaders", all, "groups", groups));
  }
}
