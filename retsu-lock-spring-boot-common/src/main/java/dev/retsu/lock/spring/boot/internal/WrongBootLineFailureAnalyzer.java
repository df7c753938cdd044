package dev.retsu.lock.spring.boot.internal;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/**
 * Turns the line check's failure into Spring Boot's start-up report, so that the fix is the first
 * thing a reader sees rather than a line inside a bean-creation stack trace. Registered in {@code
 * META-INF/spring.factories}; the API is the same on Spring Boot 3.5 and 4.
 */
public final class WrongBootLineFailureAnalyzer
    extends AbstractFailureAnalyzer<WrongBootLineException> {

  /** Creates the analyzer; Spring Boot instantiates it. */
  public WrongBootLineFailureAnalyzer() {}

  @Override
  protected FailureAnalysis analyze(Throwable rootFailure, WrongBootLineException cause) {
    String action = cause.action();
    return new FailureAnalysis(
        cause.description() + ".",
        Character.toUpperCase(action.charAt(0)) + action.substring(1) + ".",
        cause);
  }
}
