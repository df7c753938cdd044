package dev.retsu.lock.spring.boot3;

import dev.retsu.lock.spring.boot.TestedBootLine;
import java.util.List;
import java.util.Map;
import org.springframework.context.ApplicationContext;

/** Spring Boot 3 for the shared tests of retsu-lock-spring-boot-common. */
final class Boot3Line implements TestedBootLine {

  static final Boot3Line LINE = new Boot3Line();

  @Override
  public List<Class<?>> autoConfigurations() {
    return List.of(
        RetsuLockBootLineAutoConfiguration.class, RetsuLockHealthAutoConfiguration.class);
  }

  @Override
  public Class<?> dataSourceAutoConfiguration() {
    return org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration.class;
  }

  @Override
  public String healthStatus(ApplicationContext context) {
    return context.getBean(RetsuLockHealthIndicator.class).health().getStatus().getCode();
  }

  @Override
  public Map<String, Object> healthDetails(ApplicationContext context) {
    return context.getBean(RetsuLockHealthIndicator.class).health().getDetails();
  }

  @Override
  public String healthIndicatorClass() {
    return "org.springframework.boot.actuate.health.HealthIndicator";
  }

  @Override
  public String linePackage() {
    return "dev.retsu.lock.spring.boot3.";
  }

  @Override
  public int major() {
    return 3;
  }
}
