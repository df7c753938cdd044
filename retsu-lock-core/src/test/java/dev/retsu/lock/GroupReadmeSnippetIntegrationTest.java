package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.sql.PreparedStatement;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The LeaderGroup snippet of docs/, compiled and run here; {@link DocsSnippetsTest} keeps it
 * identical.
 */
@ExtendWith(PostgresExtension.class)
class GroupReadmeSnippetIntegrationTest {

  @Test
  void leaderGroup(TestDatabase db) throws Exception {
    db.execute("CREATE TABLE tenant_runs (shard text, token bigint)");
    DataSource dataSource = db.dataSource();
    // snippet:group/leader-group
    LeaderGroup group =
        LeaderGroup.partitioned(dataSource, "tenants", 64) // keys named ("tenants", "0".."63")
            .candidateId("worker-1")
            .listener(
                new LeaderListener() {
                  @Override
                  public void onLost(Term term, LossReason reason, Throwable cause) {
                    System.out.println("stopped serving " + term.key() + ": " + reason);
                  }
                })
            .build();
    group.start(
        ctx -> {
          // runs on the session that holds ctx.term().key(), every refreshInterval (15 s)
          ctx.ensureLeader();
          try (PreparedStatement ps =
              ctx.connection().prepareStatement("INSERT INTO tenant_runs VALUES (?, ?)")) {
            ps.setString(1, ctx.term().key().toString());
            ps.setLong(2, ctx.fencingToken().xid());
            ps.executeUpdate();
          }
        });
    // on shutdown, group.close(): every key's work stops, onLost per key, then the sessions end
    // end-snippet
    try {
      await()
          .atMost(Duration.ofSeconds(30))
          .until(
              () ->
                  db.queryInts("SELECT count(DISTINCT shard)::int FROM tenant_runs").get(0) == 64);
      assertThat(group.heldCount()).isEqualTo(64);
      assertThat(group.openSessions()).isEqualTo(LeaderGroup.DEFAULT_SESSIONS);
    } finally {
      group.close();
    }
    assertThat(group.heldCount()).isZero();
  }
}
