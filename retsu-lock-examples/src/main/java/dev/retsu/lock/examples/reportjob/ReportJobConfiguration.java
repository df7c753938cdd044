package dev.retsu.lock.examples.reportjob;

import dev.retsu.lock.spring.boot.LeaderOnly;
import dev.retsu.lock.spring.boot.RetsuLeader;
import dev.retsu.lock.spring.boot.RetsuLeaders;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;

// snippet:boot/report-job
/**
 * A job that must run on one replica at a time, the whole Spring side of it. With the starter on
 * the class path (retsu-lock-spring-boot4-starter, or -boot3- on Spring Boot 3.5) and one line in
 * application.properties, {@code retsu.lock.leaders.report.refresh-interval=15s}, every replica
 * schedules {@link ReportJob#run()}, and only the one that leads {@code report} runs it.
 */
@Configuration(proxyBeanMethods = false)
@EnableScheduling
public class ReportJobConfiguration {

  /** The name of the leader under retsu.lock.leaders. */
  public static final String LEADER = "report";

  @Bean
  ReportJob reportJob(RetsuLeaders leaders) {
    return new ReportJob(leaders.get(LEADER));
  }

  /** Runs on the leader only; a standby's call returns at once. */
  public static class ReportJob {
    private static final Logger log = LoggerFactory.getLogger(ReportJob.class);
    private final RetsuLeader leader;

    ReportJob(RetsuLeader leader) {
      this.leader = leader;
    }

    /** Every minute (or {@code report.interval}), on the session that holds the lock. */
    @Scheduled(fixedDelayString = "${report.interval:PT1M}")
    @LeaderOnly(LEADER)
    public void run() {
      int rows =
          leader
              .jdbcTemplate() // the lock's own session: fails outside a term, never a pooled one
              .update(
                  "INSERT INTO report_run (candidate, ran_at) VALUES (?, clock_timestamp())",
                  leader.candidateId());
      log.info("Report written by {} ({} row)", leader.candidateId(), rows);
    }
  }
}
// end-snippet
