package dev.retsu.lock.spring.boot;

import java.util.List;
import java.util.Map;
import org.springframework.context.ApplicationContext;

/**
 * What differs between the Spring Boot lines in the shared tests: each line's module implements it
 * once and runs every abstract test of this package with it, on its own class path.
 */
public interface TestedBootLine {

  /**
   * Returns the line's own auto-configurations: the line check and the health indicator.
   *
   * @return the classes
   */
  List<Class<?>> autoConfigurations();

  /**
   * Returns the line's DataSource auto-configuration (the pool from {@code spring.datasource.*}).
   *
   * @return the class
   */
  Class<?> dataSourceAutoConfiguration();

  /**
   * Returns the status of the {@code retsuLock} health indicator, as its line's API reports it.
   *
   * @param context a context with the indicator
   * @return {@code UP}, {@code OUT_OF_SERVICE} or {@code DOWN}
   */
  String healthStatus(ApplicationContext context);

  /**
   * Returns the indicator's details.
   *
   * @param context a context with the indicator
   * @return the details
   */
  Map<String, Object> healthDetails(ApplicationContext context);

  /**
   * Returns the name of the class the health auto-configuration is conditional on.
   *
   * @return the line's HealthIndicator type
   */
  String healthIndicatorClass();

  /**
   * Returns the line's auto-configuration package, {@code dev.retsu.lock.spring.boot4.} or {@code
   * ...boot3.}.
   *
   * @return the prefix, with the dot
   */
  String linePackage();

  /**
   * Returns the Spring Boot major version this line's module is for.
   *
   * @return 3 or 4
   */
  int major();
}
