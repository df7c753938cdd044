package dev.retsu.lock.examples.quarkus;

import dev.retsu.lock.quarkus.LeaderOnly;
import dev.retsu.lock.quarkus.RetsuLeaderGroup;
import dev.retsu.lock.quarkus.RetsuLeaders;
import io.quarkus.scheduler.Scheduled;
import jakarta.enterprise.context.ApplicationScoped;
import java.sql.PreparedStatement;
import java.sql.SQLException;

// snippet:quarkus/tenant-jobs
/**
 * One job per tenant, the tenants spread over the replicas. With {@code
 * retsu.lock.groups.tenants.keys=eu,us} in application.properties every replica is a member of the
 * group {@code tenants}; the scheduler calls both methods everywhere, and each call gets past
 * {@code @LeaderOnly} only on the replica that owns that tenant's key. The row goes through the
 * session that holds the key, so it stops with that key's term.
 */
@ApplicationScoped
public class TenantJobs {

  private final RetsuLeaders leaders;

  TenantJobs(RetsuLeaders leaders) {
    this.leaders = leaders;
  }

  @Scheduled(every = "${tenants.every:10s}")
  @LeaderOnly(value = "tenants", key = "eu")
  void eu() throws SQLException {
    record("eu");
  }

  @Scheduled(every = "${tenants.every:10s}")
  @LeaderOnly(value = "tenants", key = "us")
  void us() throws SQLException {
    record("us");
  }

  private void record(String tenant) throws SQLException {
    RetsuLeaderGroup tenants = leaders.group("tenants");
    try (PreparedStatement insert =
        tenants
            .context(tenant)
            .connection()
            .prepareStatement(
                "INSERT INTO tenant_run (tenant, candidate, ran_at)"
                    + " VALUES (?, ?, clock_timestamp())")) {
      insert.setString(1, tenant);
      insert.setString(2, tenants.group().candidateId());
      insert.executeUpdate();
    }
  }
}
// end-snippet
