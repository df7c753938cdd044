package dev.retsu.lock.spring.boot;

import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;

/**
 * Health {@code retsuLock}: UP on the leader and on standbys alike (a DOWN standby would be taken
 * out by a readiness probe, and then nobody could take over), OUT_OF_SERVICE while a leader stops
 * or after it stopped, DOWN when a leader's loop ended with an error. Details per leader: role,
 * term, fencing token, holder (this instance, while it leads), age of the last refresh. No database
 * I/O: everything comes from the loop's state and its listener callbacks.
 */
public final class RetsuLockHealthIndicator implements HealthIndicator {

  private final RetsuLeaders leaders;

  /**
   * Creates the indicator.
   *
   * @param leaders the leaders it reports
   */
  public RetsuLockHealthIndicator(RetsuLeaders leaders) {
    this.leaders = leaders;
  }

  @Override
  public Health health() {
    Status status = Status.UP;
    Map<String, Object> details = new LinkedHashMap<>();
    for (RetsuLeader l : leaders.all().values()) {
      details.put(l.name(), l.details());
      String role = l.status();
      if (role.equals("failed")) {
        status = Status.DOWN;
      } else if ((role.equals("stopping") || role.equals("stopped")) && status != Status.DOWN) {
        status = Status.OUT_OF_SERVICE;
      }
    }
    return Health.status(status).withDetail("leaders", details).build();
  }
}
