package dev.retsu.lock.spring.boot;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The health of every leader and group, in no Spring Boot line's health API: each Boot line's
 * auto-configuration turns it into the indicator {@code retsuLock}. No I/O: everything comes from
 * the loops' and groups' state and their listener callbacks. Immutable.
 *
 * <table>
 *   <caption>Status</caption>
 *   <tr><th>status</th><th>when</th></tr>
 *   <tr><td>{@code UP}</td><td>every leader leads or stands by (the {@code standby} details say
 *       why it does not lead: {@code held-elsewhere}, {@code database-unreachable} with the last
 *       error, {@code stepped-down}, {@code starting}); every group is a member. A standby is UP
 *       on purpose: a DOWN standby would be taken out by a readiness probe, and then nobody could
 *       take over. A key held by a session outside the candidates' role is UP too: the
 *       application is healthy, and restarting it would not free the key; the leader's {@code
 *       holder} says {@code "foreign": true} when {@code retsu.lock.watch.enabled=true} (health
 *       reads nothing; without the watch the {@code leaders} endpoint shows it).</td></tr>
 *   <tr><td>{@code OUT_OF_SERVICE}</td><td>a leader or group is stopping or stopped</td></tr>
 *   <tr><td>{@code DOWN}</td><td>a leader or group will never lead again in this process (its
 *       loop failed: a transaction pooler, {@code failure-policy: exit}, or {@code fail-fast}
 *       with the database down at start); liveness is BROKEN then too</td></tr>
 * </table>
 */
public final class RetsuLockHealth {

  /** The status, in the order of severity. */
  public enum Status {
    /** Every leader and group takes part. */
    UP,
    /** One is stopping or stopped. */
    OUT_OF_SERVICE,
    /** One will never lead again. */
    DOWN
  }

  private final Status status;
  private final Map<String, Object> details;

  private RetsuLockHealth(Status status, Map<String, Object> details) {
    this.status = status;
    this.details = details;
  }

  static RetsuLockHealth of(RetsuLeaders all) {
    Status status = Status.UP;
    Map<String, Object> leaders = new LinkedHashMap<>();
    for (RetsuLeader l : all.all().values()) {
      leaders.put(l.name(), l.details());
      status = worse(status, of(l.status()));
    }
    Map<String, Object> groups = new LinkedHashMap<>();
    for (RetsuLeaderGroup g : all.groups().values()) {
      groups.put(g.name(), g.details());
      status = worse(status, of(g.status()));
    }
    Map<String, Object> details = new LinkedHashMap<>();
    details.put("leaders", leaders);
    if (!groups.isEmpty()) {
      details.put("groups", groups);
    }
    return new RetsuLockHealth(status, java.util.Collections.unmodifiableMap(details));
  }

  private static Status of(String role) {
    switch (role) {
      case "failed":
        return Status.DOWN;
      case "stopping":
      case "stopped":
        return Status.OUT_OF_SERVICE;
      default:
        return Status.UP;
    }
  }

  private static Status worse(Status a, Status b) {
    return a.compareTo(b) >= 0 ? a : b;
  }

  /**
   * Returns the status.
   *
   * @return the worst of every leader's and group's
   */
  public Status status() {
    return status;
  }

  /**
   * Returns the details: {@code leaders} (and {@code groups}, when there are any) by name.
   *
   * @return the details, unmodifiable
   */
  public Map<String, Object> details() {
    return details;
  }
}
