package dev.retsu.lock.examples.bootdocs;

import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.spring.boot.RetsuLockDataSource;
import javax.sql.DataSource;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Primary;

// snippet:boot/lock-data-source
/** The application's pool, and a small one for the locks that goes straight to the primary. */
@Configuration(proxyBeanMethods = false)
public class LockDataSourceConfiguration {

  @Bean
  @Primary
  @ConfigurationProperties("app.datasource") // jdbc-url, username, maximum-pool-size, ...
  HikariDataSource dataSource() {
    return new HikariDataSource(); // declaring one DataSource makes Boot's own back off
  }

  @Bean
  @RetsuLockDataSource
  DataSource lockDataSource() {
    HikariDataSource locks = new HikariDataSource();
    locks.setJdbcUrl("jdbc:postgresql://db-primary:5432/app"); // past any transaction pooler
    locks.setUsername("app");
    locks.setMaximumPoolSize(2); // a leader holds one session per term
    return locks;
  }
}
// end-snippet
