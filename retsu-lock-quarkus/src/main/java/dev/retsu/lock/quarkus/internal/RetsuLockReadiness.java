package dev.retsu.lock.quarkus.internal;

import dev.retsu.lock.quarkus.RetsuLeaders;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

/** Readiness: UP while every leader leads or stands by; registered with SmallRye Health. */
@Readiness
@Singleton
public class RetsuLockReadiness implements HealthCheck {

  private final RetsuLeaders leaders;

  @Inject
  RetsuLockReadiness(RetsuLeaders leaders) {
    this.leaders = leaders;
  }

  @Override
  public HealthCheckResponse call() {
    return RetsuLockHealth.of(leaders, false);
  }
}
