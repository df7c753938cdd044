package dev.retsu.lock.spring.boot;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.springframework.beans.factory.annotation.Qualifier;

/**
 * Marks the {@link javax.sql.DataSource} the locks use, when it is not the application's own (as
 * {@code @QuartzDataSource} does for Quartz):
 *
 * <pre>{@code
 * @Bean
 * @RetsuLockDataSource
 * DataSource lockDataSource() { ... } // e.g. straight to the primary, past a transaction pooler
 * }</pre>
 *
 * Leaders and groups take, in order: the one DataSource bean with this qualifier; else the bean
 * named {@code retsuLockDataSource} (the older convention); else the application's unique or
 * primary DataSource. Declaring a DataSource bean of your own makes Spring Boot back off from
 * creating the application's, so mark that one {@code @Primary} if you declare it yourself too.
 */
@Target({ElementType.FIELD, ElementType.METHOD, ElementType.PARAMETER, ElementType.TYPE})
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Qualifier
public @interface RetsuLockDataSource {}
