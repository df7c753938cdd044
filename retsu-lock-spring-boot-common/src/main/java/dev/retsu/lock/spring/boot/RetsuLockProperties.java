package dev.retsu.lock.spring.boot;

import dev.retsu.lock.FailurePolicy;
import dev.retsu.lock.LeaderGroup;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.TakeoverMode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Properties under {@code retsu.lock}: named leaders, each one {@link LeaderLoop}, and named
 * groups, each one {@link LeaderGroup}. The defaults are core's ({@code
 * LeaderLoopBuilder.DEFAULT_*}, {@code LeaderGroup.DEFAULT_*}), except one: {@code fail-fast} is
 * false, so a service started before its database keeps contending and leads once the database is
 * up (a plain {@code LeaderLoop.run()} fails fast instead, because its caller sees the exception; a
 * Spring context has nobody to catch it). The failure policy's default is core's {@link
 * FailurePolicy#STEP_DOWN} too, because a library that ends the JVM surprises Spring users. Every
 * value is checked by core's builders when the context starts, with core's "..., but was X"
 * messages. Not thread-safe; bound once.
 */
@ConfigurationProperties("retsu.lock")
public class RetsuLockProperties {

  /** Whether leaders are created at all; false leaves nothing of retsu-lock in the context. */
  private boolean enabled = true;

  /**
   * This instance's candidate id, shown in logs, metrics and application_name; every leader's
   * default. Empty: host, pid and a random suffix.
   */
  private String candidateId;

  /**
   * Lifecycle phase of the leaders: they start after, and stop before, lifecycle beans of lower
   * phases. 0 stops them after the web server and the task schedulers (which are in higher phases).
   */
  private int lifecyclePhase = 0;

  /**
   * Whether every leader is a preferred candidate (a non-preferred leader hands over to it at its
   * next refresh; for a rolling deploy, set it on the new instances); each leader's default.
   */
  private boolean preferred = false;

  /** The leadership watch: leader changes as events on every replica, the holder in health. */
  private final Watch watch = new Watch();

  /** Named leaders: one lock key and one leader loop each. */
  private final Map<String, Leader> leaders = new LinkedHashMap<>();

  /** Named groups: many keys (or partitions) spread over the instances, one LeaderGroup each. */
  private final Map<String, Group> groups = new LinkedHashMap<>();

  public boolean isEnabled() {
    return enabled;
  }

  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  public String getCandidateId() {
    return candidateId;
  }

  public void setCandidateId(String candidateId) {
    this.candidateId = candidateId;
  }

  public int getLifecyclePhase() {
    return lifecyclePhase;
  }

  public void setLifecyclePhase(int lifecyclePhase) {
    this.lifecyclePhase = lifecyclePhase;
  }

  public boolean isPreferred() {
    return preferred;
  }

  public void setPreferred(boolean preferred) {
    this.preferred = preferred;
  }

  public Watch getWatch() {
    return watch;
  }

  public Map<String, Leader> getLeaders() {
    return leaders;
  }

  /** {@code retsu.lock.watch.*}: one LeaderWatch session per application context. */
  public static class Watch {

    /**
     * Whether a LeaderWatch (one more database session per instance) publishes every leader change
     * of every leader and group as a LeaderChangedEvent and gives standbys the holder in health and
     * the leaders endpoint. The database must be reachable when the context starts.
     */
    private boolean enabled = false;

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }
  }

  public Map<String, Group> getGroups() {
    return groups;
  }

  /** How a leader runs without a database, for tests of applications. */
  public enum TestMode {
    /** Not a test: the leader contends for its lock on the database. */
    OFF,
    /** Always the leader, without a database: its task runs every refresh interval. */
    ALWAYS_LEADER,
    /**
     * Never the leader, without a database: its task and its {@code @LeaderOnly} work never run.
     */
    NEVER_LEADER
  }

  /**
   * What a leader and a group have in common: who takes part, its task, and the bounds of its
   * sessions. Not thread-safe; bound once.
   */
  public abstract static class Participant {

    /** This instance's candidate id here; empty: retsu.lock.candidate-id. */
    private String candidateId;

    /**
     * Bean name of the LeaderTask run every refresh (per held key, for a group); empty: the bean
     * named like the leader or group, if there is one, else a task that does nothing (leadership
     * for @LeaderOnly methods only).
     */
    private String task;

    /** Whether it starts with the application context. */
    private boolean autoStartup = true;

    /** Wait between the end of one refresh (run of the task) and the next. */
    private Duration refreshInterval = Duration.ofSeconds(15);

    /** Ownership proof on each session when it is otherwise quiet. */
    private Duration heartbeatInterval = Duration.ofSeconds(2);

    /** Client deadline after the last successful round trip on a session. */
    private Duration selfFenceAfter = Duration.ofSeconds(8);

    /** Network timeout of the library's own round trips. */
    private Duration roundTripTimeout = Duration.ofSeconds(10);

    /** How long stopping waits for running leader work before the lock is released anyway. */
    private Duration closeTimeout = Duration.ofSeconds(10);

    /** idle_session_timeout of each session; 0 turns it off. */
    private Duration serverIdleSessionTimeout = Duration.ofSeconds(11);

    /** TCP keepalives of each session. */
    private final Keepalives serverKeepalives = new Keepalives();

    /**
     * Whether a first contact that cannot reach the database ends it for good (health DOWN,
     * liveness BROKEN); false keeps trying, so an instance started before its database takes part
     * once it is up.
     */
    private boolean failFast = false;

    /** Bound by Spring Boot. */
    Participant() {}

    public String getCandidateId() {
      return candidateId;
    }

    public void setCandidateId(String candidateId) {
      this.candidateId = candidateId;
    }

    public String getTask() {
      return task;
    }

    public void setTask(String task) {
      this.task = task;
    }

    public boolean isAutoStartup() {
      return autoStartup;
    }

    public void setAutoStartup(boolean autoStartup) {
      this.autoStartup = autoStartup;
    }

    public Duration getRefreshInterval() {
      return refreshInterval;
    }

    public void setRefreshInterval(Duration refreshInterval) {
      this.refreshInterval = refreshInterval;
    }

    public Duration getHeartbeatInterval() {
      return heartbeatInterval;
    }

    public void setHeartbeatInterval(Duration heartbeatInterval) {
      this.heartbeatInterval = heartbeatInterval;
    }

    public Duration getSelfFenceAfter() {
      return selfFenceAfter;
    }

    public void setSelfFenceAfter(Duration selfFenceAfter) {
      this.selfFenceAfter = selfFenceAfter;
    }

    public Duration getRoundTripTimeout() {
      return roundTripTimeout;
    }

    public void setRoundTripTimeout(Duration roundTripTimeout) {
      this.roundTripTimeout = roundTripTimeout;
    }

    public Duration getCloseTimeout() {
      return closeTimeout;
    }

    public void setCloseTimeout(Duration closeTimeout) {
      this.closeTimeout = closeTimeout;
    }

    public Duration getServerIdleSessionTimeout() {
      return serverIdleSessionTimeout;
    }

    public void setServerIdleSessionTimeout(Duration serverIdleSessionTimeout) {
      this.serverIdleSessionTimeout = serverIdleSessionTimeout;
    }

    public Keepalives getServerKeepalives() {
      return serverKeepalives;
    }

    public boolean isFailFast() {
      return failFast;
    }

    public void setFailFast(boolean failFast) {
      this.failFast = failFast;
    }
  }

  /** One named leader: {@code retsu.lock.leaders.<name>.*}. */
  public static class Leader extends Participant {

    /** The lock key; without one, the key is namespace "retsu-lock" and the leader's name. */
    private final Key key = new Key();

    /** POLL: standbys retry every retry-interval; WAIT: standbys block in pg_advisory_lock. */
    private TakeoverMode takeover = TakeoverMode.POLL;

    /** Wait between standby attempts. */
    private Duration retryInterval = Duration.ofSeconds(15);

    /** Each standby wait is drawn from retry-interval × (1 − jitter) to retry-interval; [0, 1). */
    private double retryJitter = 0.1;

    /** Longest one refresh may run; a longer one is interrupted and the term ends. */
    private Duration refreshTimeout = Duration.ofSeconds(60);

    /** What a failed term does: STEP_DOWN contends again after a backoff; EXIT stops the loop. */
    private FailurePolicy failurePolicy = FailurePolicy.STEP_DOWN;

    /** Longest STEP_DOWN backoff between failed terms. */
    private Duration maxBackoff = Duration.ofMinutes(5);

    /**
     * WAIT only: longest single blocking wait before it is re-armed, and so the oldest horizon a
     * waiting standby holds back from VACUUM (each re-arm leaves one ERROR line in the server log).
     */
    private Duration waitTimeout = Duration.ofSeconds(60);

    /** Run without a database, for tests: OFF, ALWAYS_LEADER or NEVER_LEADER. */
    private TestMode testMode = TestMode.OFF;

    /** Role in Spring Integration's OnGrantedEvent and OnRevokedEvent; empty: the leader's name. */
    private String role;

    /**
     * Whether this candidate is preferred: its standby waits (WAIT) and a leader that is not
     * preferred hands over to it at its next refresh; empty: retsu.lock.preferred.
     */
    private Boolean preferred;

    /**
     * Lock-delay after an abnormal loss: a new term that cannot tell the previous one ended
     * gracefully waits this long before its first work; empty: off. At least the previous leader's
     * self-fence-after to cover it.
     */
    private Duration takeoverDelay;

    public Key getKey() {
      return key;
    }

    public TakeoverMode getTakeover() {
      return takeover;
    }

    public void setTakeover(TakeoverMode takeover) {
      this.takeover = takeover;
    }

    public Duration getRetryInterval() {
      return retryInterval;
    }

    public void setRetryInterval(Duration retryInterval) {
      this.retryInterval = retryInterval;
    }

    public double getRetryJitter() {
      return retryJitter;
    }

    public void setRetryJitter(double retryJitter) {
      this.retryJitter = retryJitter;
    }

    public Duration getRefreshTimeout() {
      return refreshTimeout;
    }

    public void setRefreshTimeout(Duration refreshTimeout) {
      this.refreshTimeout = refreshTimeout;
    }

    public FailurePolicy getFailurePolicy() {
      return failurePolicy;
    }

    public void setFailurePolicy(FailurePolicy failurePolicy) {
      this.failurePolicy = failurePolicy;
    }

    public Duration getMaxBackoff() {
      return maxBackoff;
    }

    public void setMaxBackoff(Duration maxBackoff) {
      this.maxBackoff = maxBackoff;
    }

    public Duration getWaitTimeout() {
      return waitTimeout;
    }

    public void setWaitTimeout(Duration waitTimeout) {
      this.waitTimeout = waitTimeout;
    }

    public TestMode getTestMode() {
      return testMode;
    }

    public void setTestMode(TestMode testMode) {
      this.testMode = testMode;
    }

    public String getRole() {
      return role;
    }

    public void setRole(String role) {
      this.role = role;
    }

    public Boolean getPreferred() {
      return preferred;
    }

    public void setPreferred(Boolean preferred) {
      this.preferred = preferred;
    }

    public Duration getTakeoverDelay() {
      return takeoverDelay;
    }

    public void setTakeoverDelay(Duration takeoverDelay) {
      this.takeoverDelay = takeoverDelay;
    }
  }

  /**
   * One named group: {@code retsu.lock.groups.<name>.*}. Exactly one of {@code keys} (names, each
   * key {@code LockKey.named(namespace, name)}) or {@code partitions} (keys {@code "0"} to {@code
   * "<n-1>"} in the namespace). Every instance must configure the same keys in the same order.
   */
  public static class Group extends Participant {

    /** The keys' namespace; empty: the group's name. */
    private String namespace;

    /** The keys by name, in the same order on every instance; or use partitions. */
    private final List<String> keys = new ArrayList<>();

    /** How many partition keys ("0" to "n-1"); or use keys. */
    private Integer partitions;

    /** Sessions this member opens; keys spread over them. */
    private int sessions = LeaderGroup.DEFAULT_SESSIONS;

    /** The most keys one locking statement tries. */
    private int batchSize = LeaderGroup.DEFAULT_BATCH_SIZE;

    /** Longest one refresh of one key may run (it holds its session's worker). */
    private Duration refreshTimeout = LeaderGroup.DEFAULT_REFRESH_TIMEOUT;

    /** How often this member reads the membership and rebalances. */
    private Duration membershipInterval = LeaderGroup.DEFAULT_MEMBERSHIP_INTERVAL;

    /** Wait before a lost or failed session is opened again. */
    private Duration reconnectInterval = LeaderGroup.DEFAULT_RECONNECT_INTERVAL;

    /** The most keys for which per-key metric series are exported (two per key). */
    private int perKeyMetricsBudget = 100;

    public String getNamespace() {
      return namespace;
    }

    public void setNamespace(String namespace) {
      this.namespace = namespace;
    }

    public List<String> getKeys() {
      return keys;
    }

    public Integer getPartitions() {
      return partitions;
    }

    public void setPartitions(Integer partitions) {
      this.partitions = partitions;
    }

    public int getSessions() {
      return sessions;
    }

    public void setSessions(int sessions) {
      this.sessions = sessions;
    }

    public int getBatchSize() {
      return batchSize;
    }

    public void setBatchSize(int batchSize) {
      this.batchSize = batchSize;
    }

    public Duration getRefreshTimeout() {
      return refreshTimeout;
    }

    public void setRefreshTimeout(Duration refreshTimeout) {
      this.refreshTimeout = refreshTimeout;
    }

    public Duration getMembershipInterval() {
      return membershipInterval;
    }

    public void setMembershipInterval(Duration membershipInterval) {
      this.membershipInterval = membershipInterval;
    }

    public Duration getReconnectInterval() {
      return reconnectInterval;
    }

    public void setReconnectInterval(Duration reconnectInterval) {
      this.reconnectInterval = reconnectInterval;
    }

    public int getPerKeyMetricsBudget() {
      return perKeyMetricsBudget;
    }

    public void setPerKeyMetricsBudget(int perKeyMetricsBudget) {
      this.perKeyMetricsBudget = perKeyMetricsBudget;
    }

    /**
     * Returns the keys these properties name.
     *
     * @param group the group's name, the default namespace
     * @return the keys, in order
     * @throws IllegalArgumentException when both or neither of keys and partitions are set
     */
    List<LockKey> toLockKeys(String group) {
      String prefix = "retsu.lock.groups." + group;
      String ns = namespace == null ? group : namespace;
      if (keys.isEmpty() == (partitions == null)) {
        throw new IllegalArgumentException(
            prefix
                + " needs exactly one of keys or partitions, but was keys="
                + keys
                + ", partitions="
                + partitions);
      }
      List<LockKey> out = new ArrayList<>();
      if (partitions != null) {
        if (partitions < 1 || partitions > LeaderGroup.MAX_KEYS) {
          throw new IllegalArgumentException(
              prefix
                  + ".partitions must be within 1.."
                  + LeaderGroup.MAX_KEYS
                  + ", but was "
                  + partitions);
        }
        for (int i = 0; i < partitions; i++) {
          out.add(LockKey.named(ns, Integer.toString(i)));
        }
      } else {
        for (String k : keys) {
          out.add(LockKey.named(ns, k));
        }
      }
      return out;
    }

    /** The key a {@code @LeaderOnly(key = ...)} names, or null if it is not one of the group's. */
    LockKey keyNamed(String group, String keyName) {
      boolean known =
          partitions != null
              ? keyName.matches("0|[1-9][0-9]{0,5}") && Integer.parseInt(keyName) < partitions
              : keys.contains(keyName);
      return known ? LockKey.named(namespace == null ? group : namespace, keyName) : null;
    }
  }

  /**
   * A lock key: exactly one of first+second (two ints), value (a bigint) or namespace+name (a
   * SHA-256-derived bigint).
   */
  public static class Key {

    /** First part of a two-part key, pg_advisory_lock(int, int); needs second. */
    private Integer first;

    /** Second part of a two-part key; needs first. */
    private Integer second;

    /** A bigint key, pg_advisory_lock(bigint). */
    private Long value;

    /** Namespace of a named key (LockKey.named); needs name. */
    private String namespace;

    /** Name of a named key; with namespace. */
    private String name;

    public Integer getFirst() {
      return first;
    }

    public void setFirst(Integer first) {
      this.first = first;
    }

    public Integer getSecond() {
      return second;
    }

    public void setSecond(Integer second) {
      this.second = second;
    }

    public Long getValue() {
      return value;
    }

    public void setValue(Long value) {
      this.value = value;
    }

    public String getNamespace() {
      return namespace;
    }

    public void setNamespace(String namespace) {
      this.namespace = namespace;
    }

    public String getName() {
      return name;
    }

    public void setName(String name) {
      this.name = name;
    }

    /**
     * Returns the key these properties name.
     *
     * @param leader the leader's name, the default key's name
     * @return the key
     * @throws IllegalArgumentException when the forms are mixed or one is incomplete
     */
    LockKey toLockKey(String leader) {
      String prefix = "retsu.lock.leaders." + leader + ".key";
      boolean pair = first != null || second != null;
      boolean named = namespace != null || name != null;
      int forms = (pair ? 1 : 0) + (value != null ? 1 : 0) + (named ? 1 : 0);
      if (forms > 1) {
        throw new IllegalArgumentException(
            prefix
                + " must be one of first+second, value or namespace+name, but was "
                + describe());
      }
      if (pair) {
        if (first == null || second == null) {
          throw new IllegalArgumentException(
              prefix + " needs both first and second, but was " + describe());
        }
        return LockKey.of(first, second);
      }
      if (value != null) {
        return LockKey.of(value);
      }
      if (named) {
        if (namespace == null || name == null) {
          throw new IllegalArgumentException(
              prefix + " needs both namespace and name, but was " + describe());
        }
        return LockKey.named(namespace, name);
      }
      return LockKey.named(DEFAULT_NAMESPACE, leader);
    }

    private String describe() {
      StringBuilder b = new StringBuilder("{");
      if (first != null) {
        b.append("first=").append(first).append(", ");
      }
      if (second != null) {
        b.append("second=").append(second).append(", ");
      }
      if (value != null) {
        b.append("value=").append(value).append(", ");
      }
      if (namespace != null) {
        b.append("namespace=").append(namespace).append(", ");
      }
      if (name != null) {
        b.append("name=").append(name).append(", ");
      }
      if (b.length() > 1) {
        b.setLength(b.length() - 2);
      }
      return b.append('}').toString();
    }
  }

  /** TCP keepalives of a session: PostgreSQL ends it after idle + interval × count. */
  public static class Keepalives {

    /** tcp_keepalives_idle, whole seconds. */
    private Duration idle = Duration.ofSeconds(5);

    /** tcp_keepalives_interval, whole seconds. */
    private Duration interval = Duration.ofSeconds(2);

    /** tcp_keepalives_count. */
    private int count = 3;

    public Duration getIdle() {
      return idle;
    }

    public void setIdle(Duration idle) {
      this.idle = idle;
    }

    public Duration getInterval() {
      return interval;
    }

    public void setInterval(Duration interval) {
      this.interval = interval;
    }

    public int getCount() {
      return count;
    }

    public void setCount(int count) {
      this.count = count;
    }
  }

  /** The namespace of a leader's default key: {@code LockKey.named("retsu-lock", <leader>)}. */
  public static final String DEFAULT_NAMESPACE = "retsu-lock";
}
