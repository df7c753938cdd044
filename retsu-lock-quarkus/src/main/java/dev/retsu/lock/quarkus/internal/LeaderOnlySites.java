package dev.retsu.lock.quarkus.internal;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The {@code @LeaderOnly} uses the build found (method or class, and the leader each names), set by
 * {@link RetsuLockRecorder} at start-up and checked against the configured leaders, so a misspelt
 * name fails start-up instead of skipping the job forever.
 */
public final class LeaderOnlySites {

  private static volatile Map<String, String> sites = Map.of();

  private LeaderOnlySites() {}

  static void set(Map<String, String> found) {
    sites = Map.copyOf(found);
  }

  /**
   * Checks that every use names a configured leader.
   *
   * @param leaders the configured leaders' names
   * @throws IllegalStateException naming each use of an unknown leader
   */
  public static void check(Set<String> leaders) {
    List<String> wrong = new ArrayList<>();
    for (Map.Entry<String, String> e : new java.util.TreeMap<>(sites).entrySet()) {
      if (!leaders.contains(e.getValue())) {
        wrong.add("@LeaderOnly(\"" + e.getValue() + "\") on " + e.getKey());
      }
    }
    if (!wrong.isEmpty()) {
      throw new IllegalStateException(
          String.join(", ", wrong)
              + " names no leader; retsu.lock.leaders has "
              + new TreeSet<>(leaders)
              + " (add retsu.lock.leaders.<name>.* to application.properties, or fix the name)");
    }
  }
}
