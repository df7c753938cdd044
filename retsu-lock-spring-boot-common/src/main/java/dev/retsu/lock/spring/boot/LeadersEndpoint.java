package dev.retsu.lock.spring.boot;

import dev.retsu.lock.LockHolder;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import org.springframework.boot.actuate.endpoint.Access;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;

/**
 * Read-only Actuator endpoint {@code leaders}: each leader's state, as the health indicator shows
 * it, plus the lock's current holder from {@code pg_locks}. Unlike the health indicator it queries
 * the database: one short query per leader per request, on a connection borrowed from the lock's
 * DataSource, which is fine for an on-demand endpoint and the reason it is not in the health check.
 */
@Endpoint(id = "leaders", defaultAccess = Access.READ_ONLY)
public class LeadersEndpoint {

  private final RetsuLeaders leaders;

  /**
   * Creates the endpoint.
   *
   * @param leaders the leaders it lists
   */
  public LeadersEndpoint(RetsuLeaders leaders) {
    this.leaders = leaders;
  }

  /**
   * Lists every leader.
   *
   * @return leader name to its state and the lock's holder; group name to its state
   */
  @ReadOperation
  public Map<String, Object> leaders() {
    Map<String, Object> all = new LinkedHashMap<>();
    for (RetsuLeader l : leaders.all().values()) {
      all.put(l.name(), describe(l));
    }
    Map<String, Object> groups = new LinkedHashMap<>();
    for (RetsuLeaderGroup g : leaders.groups().values()) {
      groups.put(g.name(), g.details());
    }
    return groups.isEmpty() ? Map.of("leaders", all) : Map.of("leaders", all, "groups", groups);
  }

  /**
   * Shows one leader.
   *
   * @param name the leader's name
   * @return its state and the lock's holder, or null (404) when there is no such leader
   */
  @ReadOperation
  public Map<String, Object> leader(@Selector String name) {
    return leaders.find(name).map(LeadersEndpoint::describe).orElse(null);
  }

  private static Map<String, Object> describe(RetsuLeader l) {
    Map<String, Object> d = new LinkedHashMap<>(l.details());
    d.remove("holder");
    try {
      Optional<LockHolder> holder = l.currentHolder();
      if (holder.isPresent()) {
        LockHolder h = holder.get();
        Map<String, Object> hd = new LinkedHashMap<>();
        hd.put("pid", h.pid());
        hd.put("candidate", h.candidateId().orElse(null));
        hd.put("applicationName", h.applicationName());
        hd.put("self", l.isLeader() && h.candidateId().orElse("").equals(l.candidateId()));
        d.put("holder", hd);
      } else {
        d.put("holder", null);
      }
    } catch (RuntimeException e) {
      d.put("holderError", e.getMessage());
    }
    return d;
  }
}
