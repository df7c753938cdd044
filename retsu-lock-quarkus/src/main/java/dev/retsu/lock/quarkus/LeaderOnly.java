package dev.retsu.lock.quarkus;

import jakarta.enterprise.util.Nonbinding;
import jakarta.interceptor.InterceptorBinding;
import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs a method only while this instance leads the named leader ({@code
 * retsu.lock.leaders.<name>}), typically a {@code @Scheduled} method; on a class, every business
 * method of the bean. On a standby the call returns at once without running the method. On the
 * leader the method runs with the term bound to its thread, so {@link RetsuLeader#context()}
 * reaches the session that holds the lock, and when the term ends (the application stops, or
 * leadership is lost) the method is interrupted, and a graceful stop waits for it (up to the
 * leader's {@code close-timeout}) before the lock is released.
 *
 * <p>It is a CDI interceptor binding: the method must belong to a bean and be called through it
 * (the scheduler does so), must not be private or static, and must return {@code void}. The build
 * fails when one returns something else; start-up fails when no leader has this name.
 *
 * <p>With {@link #key()}, {@link #value()} names a group ({@code retsu.lock.groups.<name>}) and the
 * method runs only on the member that owns that key, on that key's term: every end of the key's
 * term interrupts it and awaits it (up to the group's {@code close-timeout}) before the key is
 * released. Start-up fails when the key is not in the group's {@code keys}.
 */
@InterceptorBinding
@Target({ElementType.METHOD, ElementType.TYPE})
@Retention(RetentionPolicy.RUNTIME)
@Inherited
@Documented
public @interface LeaderOnly {

  /**
   * The leader's name under {@code retsu.lock.leaders}, or with {@link #key()} the group's name
   * under {@code retsu.lock.groups}.
   *
   * @return the name
   */
  @Nonbinding
  String value();

  /**
   * A key of the group {@link #value()} names, one of its {@code keys}; empty (the default) for a
   * leader.
   *
   * @return the key's name
   */
  @Nonbinding
  String key() default "";
}
