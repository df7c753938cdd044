package dev.retsu.lock.quarkus.internal;

import dev.retsu.lock.quarkus.RetsuLeader;
import dev.retsu.lock.quarkus.RetsuLeaderGroup;
import dev.retsu.lock.quarkus.RetsuLeaders;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.HealthCheckResponseBuilder;

/**
 * The health of every leader, with no I/O: everything comes from the loops' state and their
 * listener callbacks. A standby is UP on purpose: a DOWN standby would be taken out by a readiness
 * probe, and then nobody could take over. A leader that will never lead again in this process (its
 * loop failed) is DOWN on both readiness and liveness, so the platform restarts it; a stopping or
 * stopped one is DOWN on readiness only. A group is UP once started, whether this member owns keys
 * or none, and DOWN when it failed for good.
 */
final class RetsuLockHealth {

  static final String NAME = "retsu-lock";

  private RetsuLockHealth() {}

  static HealthCheckResponse of(RetsuLeaders leaders, boolean liveness) {
    HealthCheckResponseBuilder b = HealthCheckResponse.named(NAME);
    boolean up = true;
    for (RetsuLeader l : leaders.all().values()) {
      RetsuLeader.Role role = l.role();
      if (role == RetsuLeader.Role.FAILED || (!liveness && role == RetsuLeader.Role.STOPPED)) {
        up = false;
      }
      StringBuilder text = new StringBuilder();
      l.details()
          .forEach(
              (k, v) ->
                  text.append(text.length() == 0 ? "" : ", ").append(k).append('=').append(v));
      b.withData(l.name(), text.toString());
    }
    for (RetsuLeaderGroup g : leaders.groups().values()) {
      // a member that owns no key is a healthy standby: only a group that failed for good is DOWN
      if (g.failed() || (!liveness && g.stopped())) {
        up = false;
      }
      StringBuilder text = new StringBuilder();
      g.details()
          .forEach(
              (k, v) ->
                  text.append(text.length() == 0 ? "" : ", ").append(k).append('=').append(v));
      b.withData("group:" + g.name(), text.toString());
    }
    return b.status(up).build();
  }
}
