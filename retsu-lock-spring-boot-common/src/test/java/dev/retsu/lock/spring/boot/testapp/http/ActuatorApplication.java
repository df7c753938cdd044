package dev.retsu.lock.spring.boot.testapp.http;

import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Configuration;

/**
 * A web application with Actuator and the starter, everything from auto-configuration (Boot's
 * DataSource and pool, Tomcat, the health groups), for tests that speak HTTP to it in-process.
 * Scans nothing.
 */
@Configuration(proxyBeanMethods = false)
@EnableAutoConfiguration
public class ActuatorApplication {

  /** Creates the configuration. */
  public ActuatorApplication() {}
}
