package dev.retsu.lock.spring.boot4;

import dev.retsu.lock.spring.boot.RetsuLockAutoConfiguration;
import dev.retsu.lock.spring.boot.internal.BootLine;
import org.springframework.beans.factory.config.BeanFactoryPostProcessor;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.context.annotation.Bean;

/**
 * Fails startup at once, with the one-line fix, when this Spring Boot 4 module runs in an
 * application of another Spring Boot line (a Boot 3.5 application with the Boot 4 starter would
 * otherwise start with its health indicator silently missing). Runs before any bean is created.
 */
@AutoConfiguration(before = RetsuLockAutoConfiguration.class)
public class RetsuLockBootLineAutoConfiguration {

  /** The Spring Boot line of this module. */
  public static final int BOOT_LINE = 4;

  /** Creates the auto-configuration. */
  public RetsuLockBootLineAutoConfiguration() {}

  @Bean
  static BeanFactoryPostProcessor retsuLockBootLineCheck() {
    BootLine.require(BOOT_LINE, 0, BootLine.running());
    return factory -> {};
  }
}
