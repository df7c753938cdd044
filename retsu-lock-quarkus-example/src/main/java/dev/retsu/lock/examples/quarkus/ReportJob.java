package dev.retsu.lock.examples.quarkus;

import dev.retsu.lock.quarkus.LeaderOnly;
import dev.retsu.lock.quarkus.RetsuLeaders;
import io.quarkus.scheduler.Scheduled;
import jakarta.enterprise.context.ApplicationScoped;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;

// snippet:quarkus/report-job
/**
 * A job that must run on one replica at a time, the whole Quarkus side of it. With the extension on
 * the class path and {@code retsu.lock.leaders.report.*} in application.properties, every replica
 * contends for the leader {@code report}; the scheduler calls {@code run()} everywhere, and only
 * the leader's call gets past {@code @LeaderOnly}. The row goes through the session that holds the
 * lock, so it stops with the term.
 */
@ApplicationScoped
public class ReportJob {

  private final RetsuLeaders leaders;

  ReportJob(RetsuLeaders leaders) {
    this.leaders = leaders;
  }

  @Scheduled(every = "${report.every:10s}")
  @LeaderOnly("report")
  void run() throws SQLException {
    Connection session = leaders.leader("report").context().connection();
    try (PreparedStatement insert =
        session.prepareStatement(
            "INSERT INTO report_run (candidate, ran_at) VALUES (?, clock_timestamp())")) {
      insert.setString(1, leaders.leader("report").candidateId());
      insert.executeUpdate();
    }
  }
}
// end-snippet
