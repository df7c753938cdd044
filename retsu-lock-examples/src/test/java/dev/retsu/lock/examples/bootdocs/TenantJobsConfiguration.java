package dev.retsu.lock.examples.bootdocs;

import dev.retsu.lock.LeaderTask;
import dev.retsu.lock.spring.boot.LeaderOnly;
import dev.retsu.lock.spring.boot.RetsuLeaderGroup;
import dev.retsu.lock.spring.boot.RetsuLeaders;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;

// snippet:boot/group-jobs
/**
 * retsu.lock.groups.partitions.partitions=16: the replicas share 16 keys. The task named like the
 * group runs for each key this replica holds, on that key's session; the scheduled method runs only
 * on the replica that holds partition 0.
 */
@Configuration(proxyBeanMethods = false)
@EnableScheduling
public class TenantJobsConfiguration {

  @Bean("partitions")
  LeaderTask partitions(RetsuLeaders leaders) {
    RetsuLeaderGroup group = leaders.group("partitions");
    return ctx -> {
      String partition = ctx.term().key().toString();
      group
          .jdbcTemplate() // the session that holds this key
          .update("UPDATE outbox SET claimed = now() WHERE partition_key = ?", partition);
    };
  }

  @Bean
  Housekeeping housekeeping() {
    return new Housekeeping();
  }

  /** Work for one key: runs while this replica holds partition 0. */
  public static class Housekeeping {
    @Scheduled(fixedDelayString = "PT5M")
    @LeaderOnly(value = "partitions", key = "0")
    public void vacuumArchive() {
      // ...
    }
  }
}
// end-snippet
