package dev.retsu.lock.quarkus;

import dev.retsu.lock.FailurePolicy;
import dev.retsu.lock.TakeoverMode;
import io.quarkus.runtime.annotations.ConfigDocMapKey;
import io.quarkus.runtime.annotations.ConfigDocSection;
import io.quarkus.runtime.annotations.ConfigPhase;
import io.quarkus.runtime.annotations.ConfigRoot;
import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;

/** The leaders of this application, from {@code retsu.lock.*}. Read at start-up. */
@ConfigMapping(prefix = "retsu.lock")
@ConfigRoot(phase = ConfigPhase.RUN_TIME)
public interface RetsuLockConfig {

  /** The namespace of a leader's default key: {@code LockKey.named("retsu-lock", <name>)}. */
  String DEFAULT_NAMESPACE = "retsu-lock";

  /**
   * Whether the leaders and groups start. With {@code false} none contends, every
   * {@code @LeaderOnly} method is skipped, and health reports nothing.
   *
   * @return whether enabled
   */
  @WithDefault("true")
  boolean enabled();

  /**
   * This instance's candidate id, shown in the database and in health. Defaults to host, pid and a
   * random suffix.
   *
   * @return the id
   */
  Optional<String> candidateId();

  /**
   * The leaders, by name: each one contends for its own key.
   *
   * @return the leaders
   */
  @ConfigDocMapKey("leader-name")
  @ConfigDocSection
  Map<String, Leader> leaders();

  /**
   * The groups, by name: the members of each spread its keys among themselves, and a {@code
   * LeaderOnly} method with a key runs only on the member that owns that key.
   *
   * @return the groups
   */
  @ConfigDocMapKey("group-name")
  @ConfigDocSection
  Map<String, Group> groups();

  /** One named group, a {@code LeaderGroup}. */
  interface Group {

    /**
     * The Agroal data source the group takes its sessions from, by name. Defaults to the
     * application's default data source.
     *
     * @return the data source's name
     */
    Optional<String> datasource();

    /**
     * The keys' namespace: each key is {@code LockKey.named(namespace, <key>)}. Defaults to the
     * group's name.
     *
     * @return the namespace
     */
    Optional<String> namespace();

    /**
     * The keys by name, the same list in the same order on every instance.
     *
     * @return the keys
     */
    List<String> keys();

    /**
     * Sessions this member opens; the keys it owns spread over them.
     *
     * @return the sessions
     */
    @WithDefault("4")
    int sessions();

    /**
     * How often each owned key's term is refreshed.
     *
     * @return the interval
     */
    @WithDefault("15s")
    Duration refreshInterval();

    /**
     * How long one refresh of one key may take before that key's term ends.
     *
     * @return the timeout
     */
    @WithDefault("5s")
    Duration refreshTimeout();

    /**
     * How often this member reads the membership and rebalances.
     *
     * @return the interval
     */
    @WithDefault("2s")
    Duration membershipInterval();

    /**
     * How long a lost or failed session waits before it is opened again.
     *
     * @return the interval
     */
    @WithDefault("1s")
    Duration reconnectInterval();

    /**
     * How long the end of a key's term waits for that key's running {@code @LeaderOnly} work before
     * the key is released anyway (logged at ERROR).
     *
     * @return the timeout
     */
    @WithDefault("10s")
    Duration closeTimeout();

    /**
     * Whether a failure to open the first session stops the group for good (health DOWN). Off by
     * default: an application started before its database joins the group once it is up.
     *
     * @return whether to fail fast
     */
    @WithDefault("false")
    boolean failFast();
  }

  /** One named leader. */
  interface Leader {

    /**
     * The Agroal data source the leader takes its sessions from, by name. Defaults to the
     * application's default data source.
     *
     * @return the data source's name
     */
    Optional<String> datasource();

    /**
     * The lock key. Defaults to a key named after the leader in the namespace {@code retsu-lock}.
     *
     * @return the key
     */
    Key key();

    /**
     * How often the leader proves it still holds the lock.
     *
     * @return the interval
     */
    @WithDefault("15s")
    Duration refreshInterval();

    /**
     * How long a refresh may take before the term ends.
     *
     * @return the timeout
     */
    @WithDefault("60s")
    Duration refreshTimeout();

    /**
     * How long a standby waits between attempts (jittered).
     *
     * @return the interval
     */
    @WithDefault("15s")
    Duration retryInterval();

    /**
     * The jitter of the retry interval, a fraction from 0 to 1.
     *
     * @return the jitter
     */
    @WithDefault("0.1")
    double retryJitter();

    /**
     * How long a graceful end of a term waits for running {@code @LeaderOnly} work before the lock
     * is released anyway (logged at ERROR).
     *
     * @return the timeout
     */
    @WithDefault("10s")
    Duration closeTimeout();

    /**
     * Whether a failure to reach the database at the first attempt stops the leader for good
     * (health DOWN). Off by default: an application started before its database becomes a candidate
     * as soon as the database is up, and health says why it waits.
     *
     * @return whether to fail fast
     */
    @WithDefault("false")
    boolean failFast();

    /**
     * How a standby takes over: {@code poll} (no connection between attempts) or {@code wait} (one
     * session queued on the lock).
     *
     * @return the mode
     */
    @WithDefault("poll")
    TakeoverMode takeover();

    /**
     * What a failed term does: {@code step-down} (contend again) or {@code exit} (the leader stops
     * for good, health DOWN).
     *
     * @return the policy
     */
    @WithDefault("step-down")
    FailurePolicy failurePolicy();
  }

  /**
   * A lock key: exactly one of first and second (two ints), value (a bigint), or namespace and name
   * (a SHA-256-derived bigint).
   */
  interface Key {

    /**
     * First part of a two-part key, {@code pg_advisory_lock(int, int)}; needs second.
     *
     * @return the first part
     */
    OptionalInt first();

    /**
     * Second part of a two-part key; needs first.
     *
     * @return the second part
     */
    OptionalInt second();

    /**
     * A bigint key, {@code pg_advisory_lock(bigint)}.
     *
     * @return the value
     */
    OptionalLong value();

    /**
     * Namespace of a named key; needs name.
     *
     * @return the namespace
     */
    Optional<String> namespace();

    /**
     * Name of a named key; needs namespace.
     *
     * @return the name
     */
    Optional<String> name();
  }
}
