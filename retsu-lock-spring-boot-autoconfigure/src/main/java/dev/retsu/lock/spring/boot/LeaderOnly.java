package dev.retsu.lock.spring.boot;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs a method only while this instance leads the named leader ({@code
 * retsu.lock.leaders.<name>}), typically on a {@code @Scheduled} method. On a standby the call
 * returns at once without running the method. On the leader the method runs with the term bound to
 * its thread, so {@link RetsuLeader#dataSource()} and {@link RetsuLeader#jdbcTemplate()} reach the
 * session that holds the lock, and when the term ends (the application stops, or leadership is
 * lost) the method is interrupted, and a graceful stop waits for it (up to the leader's {@code
 * close-timeout}) before the lock is released.
 *
 * <p>The method is proxied, not the scheduler: the bean gets a class-based proxy, so the method
 * must be public or protected, not final and not static, and must return {@code void}. Startup
 * fails when it is not, or when no leader has this name.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface LeaderOnly {

  /**
   * The leader's name under {@code retsu.lock.leaders}.
   *
   * @return the name
   */
  String value();
}
