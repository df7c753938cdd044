package dev.retsu.lock.spring.boot;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs a method only while this instance leads the named leader ({@code
 * retsu.lock.leaders.<name>}), or holds one key of the named group ({@code
 * retsu.lock.groups.<name>}, with {@link #key()}), typically on a {@code @Scheduled} method. On a
 * standby the call returns at once without running the method. On the leader the method runs with
 * the term bound to its thread, so {@link RetsuLeader#dataSource()} and {@link
 * RetsuLeader#jdbcTemplate()} (or the group's) reach the session that holds the lock, and when the
 * term ends (the application stops, or leadership is lost) the method is interrupted, and a
 * graceful stop waits for it (up to the {@code close-timeout}) before the lock is released. Each
 * run is counted (runs, failures, last success) as the job {@code <class>.<method>} when metrics
 * are on.
 *
 * <p>The method is proxied, not the scheduler: the bean gets a class-based proxy, so the method
 * must be public or protected, not final and not static, and must return {@code void}. Startup
 * fails when it is not, when no leader or group has this name, or when a group's key is missing or
 * not one of its keys.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface LeaderOnly {

  /**
   * The leader's name under {@code retsu.lock.leaders}, or the group's under {@code
   * retsu.lock.groups}.
   *
   * @return the name
   */
  String value();

  /**
   * For a group: the key whose holder runs the method, by its name in {@code keys} or its partition
   * number. Empty for a leader.
   *
   * @return the key's name
   */
  String key() default "";
}
