package dev.retsu.lock;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;

/**
 * The validated, immutable settings of one {@link LeaderGroup}, made by {@link
 * LeaderGroupBuilder#build()}: single values are checked on the builder, the rules that tie two
 * values together here. Thread-safe.
 */
record GroupSettings(
    DataSource dataSource,
    String name,
    String candidateId,
    List<LockKey> keys,
    int sessions,
    int batchSize,
    Duration refreshInterval,
    Duration refreshTimeout,
    Duration heartbeatInterval,
    Duration selfFenceAfter,
    ServerBounds bounds,
    Duration roundTripTimeout,
    Duration membershipInterval,
    Duration reconnectInterval,
    Duration closeTimeout,
    boolean failFast,
    List<LeaderListener> listeners,
    TimeSource time) {

  GroupSettings {
    keys = List.copyOf(keys);
    listeners = List.copyOf(listeners);
    Map<LockKey, Integer> seen = new HashMap<>();
    for (int i = 0; i < keys.size(); i++) {
      Integer before = seen.put(keys.get(i), i);
      if (before != null) {
        throw new IllegalArgumentException(
            "keys must be distinct, but " + keys.get(i) + " is at " + before + " and " + i);
      }
    }
    bounds.checkDeadline(selfFenceAfter);
    if (heartbeatInterval.multipliedBy(2).compareTo(selfFenceAfter) > 0) {
      throw new IllegalStateException(
          "heartbeatInterval must be at most half of selfFenceAfter ("
              + selfFenceAfter
              + ") so that one slow heartbeat does not fence healthy keys, but was "
              + heartbeatInterval);
    }
    if (refreshTimeout.compareTo(selfFenceAfter) >= 0) {
      throw new IllegalStateException(
          "refreshTimeout must be shorter than selfFenceAfter ("
              + selfFenceAfter
              + "): a refresh holds its session's worker, so a longer one would fence every key on"
              + " the session, but was "
              + refreshTimeout);
    }
  }

  /** Sessions actually opened: never more than there are keys. */
  int sessionCount() {
    return Math.min(sessions, keys.size());
  }

  String context() {
    return "[group=" + name + ", candidate=" + candidateId + "]";
  }

  String applicationName() {
    String n = AdvisoryLock.APPLICATION_NAME_PREFIX + candidateId;
    return n.length() > 63 ? n.substring(0, 63) : n;
  }

  /** The settings every group session carries, application_name first, the marker last. */
  Map<String, String> sessionSettings(String marker) {
    Map<String, String> s = new LinkedHashMap<>();
    s.put("application_name", applicationName());
    s.putAll(bounds.sessionSettings());
    s.put(GroupSql.MARKER, marker);
    return Collections.unmodifiableMap(s);
  }

  static List<LockKey> partitions(String namespace, int count) {
    List<LockKey> keys = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      keys.add(LockKey.named(namespace, Integer.toString(i)));
    }
    return keys;
  }
}
