package dev.retsu.lock.quarkus.internal;

import dev.retsu.lock.quarkus.RetsuLeaders;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Liveness;

/**
 * Liveness: DOWN once a leader will never lead again in this process; registered with SmallRye
 * Health.
 */
@Liveness
@Singleton
public class RetsuLockLiveness implements HealthCheck {

  private final RetsuLeaders leaders;

  @Inject
  RetsuLockLiveness(RetsuLeaders leaders) {
    this.leaders = leaders;
  }

  @Override
  public HealthCheckResponse call() {
    return RetsuLockHealth.of(leaders, true);
  }
}
