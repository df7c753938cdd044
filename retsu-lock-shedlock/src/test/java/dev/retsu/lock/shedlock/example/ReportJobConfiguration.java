package dev.retsu.lock.shedlock.example;

import dev.retsu.lock.shedlock.RetsuLockProvider;
import javax.sql.DataSource;
import net.javacrumbs.shedlock.spring.annotation.EnableSchedulerLock;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.scheduling.annotation.EnableScheduling;

/**
 * The Spring wiring of the {@code @SchedulerLock} example: ShedLock's annotations as usual, with
 * the advisory-lock provider as the one {@code LockProvider} bean. The application supplies the
 * {@link DataSource} bean.
 */
// snippet:shedlock/configuration
@Configuration
@EnableScheduling
@EnableSchedulerLock(defaultLockAtMostFor = "PT10M")
public class ReportJobConfiguration {

  @Bean(destroyMethod = "close") // ends every lock session on shutdown
  public RetsuLockProvider lockProvider(DataSource dataSource) {
    return RetsuLockProvider.builder(dataSource).namespace("billing").build();
  }

  @Bean
  public ReportJob reportJob(RetsuLockProvider lockProvider) {
    return new ReportJob(lockProvider);
  }
}
// end-snippet
