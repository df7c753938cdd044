package dev.retsu.lock.quarkus.internal;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The {@code @LeaderOnly} uses the build found (method or class, the leader or group each names,
 * and the group's key), set by {@link RetsuLockRecorder} at start-up and checked against the
 * configured leaders and groups, so a misspelt name or key fails start-up instead of skipping the
 * job forever.
 */
public final class LeaderOnlySites {

  private static volatile Map<String, String> sites = Map.of();
  private static volatile Map<String, String> keys = Map.of();

  private LeaderOnlySites() {}

  static void set(Map<String, String> found, Map<String, String> foundKeys) {
    sites = Map.copyOf(found);
    keys = Map.copyOf(foundKeys);
  }

  /**
   * Checks that every use without a key names a configured leader, and every use with a key names a
   * configured group and one of its keys.
   *
   * @param leaders the configured leaders' names
   * @param groups the configured groups' keys, by group name
   * @throws IllegalStateException naming each wrong use and the property it should be in
   */
  public static void check(Set<String> leaders, Map<String, List<String>> groups) {
    List<String> wrong = new ArrayList<>();
    for (Map.Entry<String, String> e : new TreeMap<>(sites).entrySet()) {
      String name = e.getValue();
      String key = keys.get(e.getKey());
      if (key == null || key.isEmpty()) {
        if (!leaders.contains(name)) {
          wrong.add(
              "@LeaderOnly(\""
                  + name
                  + "\") on "
                  + e.getKey()
                  + " names no leader; retsu.lock.leaders has "
                  + new TreeSet<>(leaders)
                  + (groups.containsKey(name)
                      ? " ('" + name + "' is a group: give the key, @LeaderOnly(value, key))"
                      : ""));
        }
        continue;
      }
      String use = "@LeaderOnly(value = \"" + name + "\", key = \"" + key + "\") on " + e.getKey();
      List<String> groupKeys = groups.get(name);
      if (groupKeys == null) {
        wrong.add(use + " names no group; retsu.lock.groups has " + new TreeSet<>(groups.keySet()));
      } else if (!groupKeys.contains(key)) {
        wrong.add(
            use + " names a key that is not in retsu.lock.groups." + name + ".keys " + groupKeys);
      }
    }
    if (!wrong.isEmpty()) {
      throw new IllegalStateException(
          String.join(", ", wrong)
              + " (add retsu.lock.leaders.<name>.* or retsu.lock.groups.<name>.keys to"
              + " application.properties, or fix the name)");
    }
  }
}
