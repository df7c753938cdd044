package dev.retsu.lock.spring.boot4;

import dev.retsu.lock.spring.boot.RetsuLeaders;
import dev.retsu.lock.spring.boot.RetsuLockHealth;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;

/**
 * Health {@code retsuLock} in Spring Boot 4's health API: {@link RetsuLockHealth} (UP on the leader
 * and on standbys alike, with the reason a standby does not lead; OUT_OF_SERVICE while a leader
 * stops or after it stopped; DOWN when one will never lead again). No database I/O.
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
    RetsuLockHealth h = leaders.health();
    Status status =
        switch (h.status()) {
          case UP -> Status.UP;
          case OUT_OF_SERVICE -> Status.OUT_OF_SERVICE;
          case DOWN -> Status.DOWN;
        };
    return Health.status(status).withDetails(h.details()).build();
  }
}
