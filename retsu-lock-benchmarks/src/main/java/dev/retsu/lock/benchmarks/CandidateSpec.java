package dev.retsu.lock.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What one candidate process runs: the implementation, its settings and where to connect. Passed to
 * {@link CandidateMain} as {@code name=value} arguments. Immutable.
 *
 * @param impl which library
 * @param mode retsu takeover mode, {@code poll} or {@code wait}
 * @param url JDBC URL (usually through a fault proxy)
 * @param user database user
 * @param id candidate id, also in {@code application_name}
 * @param key lock key (retsu) or lock name suffix (peers)
 * @param retry wait between standby attempts
 * @param refresh wait between leader refreshes
 * @param ttl lock time-to-live of the peers; null for the library default
 * @param heartbeat retsu heartbeat or Spring heart beat; null for the default
 * @param selfFenceAfter retsu self-fencing deadline; null for the defaults of all safety knobs
 * @param keepaliveIdle retsu server keepalive idle
 * @param keepaliveInterval retsu server keepalive interval
 * @param keepaliveCount retsu server keepalive count
 * @param idleSessionTimeout retsu server idle_session_timeout
 * @param pool where retsu and the raw waiter borrow connections: {@code plain} (pgjdbc's
 *     non-pooling {@code PGSimpleDataSource}), {@code hikari} (HikariCP) or {@code dbcp2} (Apache
 *     Commons DBCP2), each with its defaults
 * @param fast retsu only: {@code fastFailover()} instead of the retry interval and safety knobs
 */
record CandidateSpec(
    Impl impl,
    String mode,
    String url,
    String user,
    String id,
    long key,
    Duration retry,
    Duration refresh,
    Duration ttl,
    Duration heartbeat,
    Duration selfFenceAfter,
    Duration keepaliveIdle,
    Duration keepaliveInterval,
    int keepaliveCount,
    Duration idleSessionTimeout,
    String pool,
    boolean fast) {

  /** The data sources a retsu candidate or the raw waiter can borrow from. */
  static final java.util.Set<String> POOLS = java.util.Set.of("plain", "hikari", "dbcp2");

  /** A candidate on pgjdbc's plain data source, without fastFailover(). */
  CandidateSpec(
      Impl impl,
      String mode,
      String url,
      String user,
      String id,
      long key,
      Duration retry,
      Duration refresh,
      Duration ttl,
      Duration heartbeat,
      Duration selfFenceAfter,
      Duration keepaliveIdle,
      Duration keepaliveInterval,
      int keepaliveCount,
      Duration idleSessionTimeout) {
    this(
        impl,
        mode,
        url,
        user,
        id,
        key,
        retry,
        refresh,
        ttl,
        heartbeat,
        selfFenceAfter,
        keepaliveIdle,
        keepaliveInterval,
        keepaliveCount,
        idleSessionTimeout,
        "plain",
        false);
  }

  /** The libraries measured. */
  enum Impl {
    RETSU,
    SHEDLOCK,
    /** ShedLock with retsu-lock-shedlock's provider. */
    RETSU_SHEDLOCK,
    SPRING,
    /** Spring Integration with retsu-lock-spring-integration's leader initiator. */
    RETSU_SPRING,
    /** A plain session blocked in pg_advisory_lock: the physical limit of takeover. */
    RAW
  }

  CandidateSpec {
    Objects.requireNonNull(impl, "impl");
    Objects.requireNonNull(mode, "mode");
    Objects.requireNonNull(retry, "retry");
    Objects.requireNonNull(refresh, "refresh");
    Objects.requireNonNull(pool, "pool");
    if (!POOLS.contains(pool)) {
      throw new IllegalArgumentException(
          "pool must be one of " + new java.util.TreeSet<>(POOLS) + ", but was " + pool);
    }
  }

  /** The same candidate borrowing from another kind of data source. */
  CandidateSpec withPool(String newPool) {
    return new CandidateSpec(
        impl,
        mode,
        url,
        user,
        id,
        key,
        retry,
        refresh,
        ttl,
        heartbeat,
        selfFenceAfter,
        keepaliveIdle,
        keepaliveInterval,
        keepaliveCount,
        idleSessionTimeout,
        newPool,
        fast);
  }

  /** The same retsu candidate with {@code fastFailover()}. */
  CandidateSpec withFastFailover() {
    return new CandidateSpec(
        impl,
        mode,
        url,
        user,
        id,
        key,
        retry,
        refresh,
        ttl,
        heartbeat,
        selfFenceAfter,
        keepaliveIdle,
        keepaliveInterval,
        keepaliveCount,
        idleSessionTimeout,
        pool,
        true);
  }

  CandidateSpec withConnection(String newUrl, String newUser, String newId, long newKey) {
    return new CandidateSpec(
        impl,
        mode,
        newUrl,
        newUser,
        newId,
        newKey,
        retry,
        refresh,
        ttl,
        heartbeat,
        selfFenceAfter,
        keepaliveIdle,
        keepaliveInterval,
        keepaliveCount,
        idleSessionTimeout,
        pool,
        fast);
  }

  List<String> toArgs() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("impl", impl.name());
    m.put("mode", mode);
    m.put("url", url);
    m.put("user", user);
    m.put("id", id);
    m.put("key", Long.toString(key));
    m.put("retryMs", Long.toString(retry.toMillis()));
    m.put("refreshMs", Long.toString(refresh.toMillis()));
    put(m, "ttlMs", ttl);
    put(m, "heartbeatMs", heartbeat);
    put(m, "selfFenceMs", selfFenceAfter);
    put(m, "keepaliveIdleMs", keepaliveIdle);
    put(m, "keepaliveIntervalMs", keepaliveInterval);
    m.put("keepaliveCount", Integer.toString(keepaliveCount));
    put(m, "idleSessionTimeoutMs", idleSessionTimeout);
    m.put("pool", pool);
    m.put("fast", Boolean.toString(fast));
    List<String> args = new ArrayList<>();
    m.forEach((k, v) -> args.add(k + "=" + v));
    return args;
  }

  private static void put(Map<String, String> m, String name, Duration d) {
    if (d != null) {
      m.put(name, Long.toString(d.toMillis()));
    }
  }

  static CandidateSpec parse(String[] args) {
    Map<String, String> m = new LinkedHashMap<>();
    for (String a : args) {
      int eq = a.indexOf('=');
      if (eq <= 0) {
        throw new IllegalArgumentException("arguments must be name=value, but was " + a);
      }
      m.put(a.substring(0, eq), a.substring(eq + 1));
    }
    return new CandidateSpec(
        Impl.valueOf(m.get("impl")),
        m.getOrDefault("mode", "poll"),
        m.get("url"),
        m.get("user"),
        m.get("id"),
        Long.parseLong(m.get("key")),
        millis(m, "retryMs"),
        millis(m, "refreshMs"),
        millis(m, "ttlMs"),
        millis(m, "heartbeatMs"),
        millis(m, "selfFenceMs"),
        millis(m, "keepaliveIdleMs"),
        millis(m, "keepaliveIntervalMs"),
        Integer.parseInt(m.getOrDefault("keepaliveCount", "0")),
        millis(m, "idleSessionTimeoutMs"),
        m.getOrDefault("pool", "plain"),
        Boolean.parseBoolean(m.getOrDefault("fast", "false")));
  }

  private static Duration millis(Map<String, String> m, String name) {
    String v = m.get(name);
    return v == null ? null : Duration.ofMillis(Long.parseLong(v));
  }
}
