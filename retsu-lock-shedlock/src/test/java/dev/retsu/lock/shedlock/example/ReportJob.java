package dev.retsu.lock.shedlock.example;

import dev.retsu.lock.AdvisoryLockLease;
import dev.retsu.lock.shedlock.RetsuLockProvider;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import net.javacrumbs.shedlock.core.LockAssert;
import net.javacrumbs.shedlock.spring.annotation.SchedulerLock;
import org.springframework.scheduling.annotation.Scheduled;

// snippet:shedlock/job
/**
 * A scheduled job that runs on one node at a time: ShedLock's {@code @SchedulerLock} around a
 * {@code @Scheduled} method. Each run records itself in {@code nightly_report_run} on the lock's
 * own session, so the row is written only while the lock is held.
 */
public class ReportJob {

  private final RetsuLockProvider locks;

  ReportJob(RetsuLockProvider locks) {
    this.locks = locks;
  }

  @Scheduled(fixedDelayString = "${report.interval:PT24H}") // the tests run it every 100 ms
  @SchedulerLock(name = "nightly-report", lockAtLeastFor = "PT0.2S")
  public void run() throws SQLException {
    LockAssert.assertLocked(); // fails if the method ever runs without the lock
    // Work that must not outlive the lock runs on the lock's own session: once the lock is
    // lost (its session ended) these statements fail instead of running on another connection.
    AdvisoryLockLease lease = locks.lease("nightly-report").orElseThrow();
    lease.withConnection(
        c -> {
          try (PreparedStatement ps =
              c.prepareStatement(
                  "INSERT INTO nightly_report_run (holder, started_at, ended_at)"
                      + " SELECT current_setting('application_name'), clock_timestamp(),"
                      + " clock_timestamp() + interval '50 milliseconds' FROM pg_sleep(0.05)")) {
            return ps.executeUpdate();
          }
        });
  }
}
// end-snippet
