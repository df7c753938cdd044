package dev.retsu.lock.ha;

import java.util.Objects;

/**
 * How the HA cluster is set up: the number of PostgreSQL nodes and Patroni's DCS timing ({@code
 * bootstrap.dcs}), plus how fast HAProxy's health check marks a server down.
 *
 * <p>Patroni keeps its leader key in etcd with a lease of {@code ttl} seconds, renewed every {@code
 * loopWait} seconds; DCS and PostgreSQL calls are retried for {@code retryTimeout} seconds. Patroni
 * requires {@code ttl >= loopWait + 2 * retryTimeout}, so that a leader cut from the DCS demotes
 * itself before its key can expire. Its defaults are 30 / 10 / 10.
 *
 * @param nodes PostgreSQL nodes, 2 or 3
 * @param ttl seconds the leader key lives without renewal
 * @param loopWait seconds between Patroni's HA loops
 * @param retryTimeout seconds DCS and PostgreSQL operations are retried
 * @param checkIntervalMillis HAProxy's health-check interval (a server is marked down after two
 *     failed checks, up after one good one)
 */
public record HaSettings(
    int nodes, int ttl, int loopWait, int retryTimeout, int checkIntervalMillis) {

  /** Patroni's own defaults for ttl, loop_wait and retry_timeout. */
  public static final int DEFAULT_TTL = 30;

  /** Patroni's default loop_wait. */
  public static final int DEFAULT_LOOP_WAIT = 10;

  /** Patroni's default retry_timeout. */
  public static final int DEFAULT_RETRY_TIMEOUT = 10;

  /**
   * The suite's settings: three nodes, ttl 10 s, loop_wait 1 s, retry_timeout 4 s, HAProxy checks
   * every 500 ms.
   */
  public static final HaSettings SUITE = new HaSettings(3, 10, 1, 4, 500);

  /** Validates. */
  public HaSettings {
    if (nodes < 2 || nodes > 3) {
      throw new IllegalArgumentException("nodes must be 2 or 3, but was " + nodes);
    }
    if (loopWait < 1) {
      throw new IllegalArgumentException("loopWait must be at least 1 s, but was " + loopWait);
    }
    if (retryTimeout < 3) {
      throw new IllegalArgumentException(
          "retryTimeout must be at least 3 s, but was " + retryTimeout);
    }
    if (ttl < loopWait + 2 * retryTimeout) {
      throw new IllegalArgumentException(
          "ttl must be at least loopWait + 2 * retryTimeout ("
              + (loopWait + 2 * retryTimeout)
              + " s), but was "
              + ttl);
    }
    if (checkIntervalMillis < 100) {
      throw new IllegalArgumentException(
          "checkIntervalMillis must be at least 100, but was " + checkIntervalMillis);
    }
  }

  @Override
  public String toString() {
    return Objects.toString(nodes)
        + " nodes, ttl "
        + ttl
        + " s, loop_wait "
        + loopWait
        + " s, retry_timeout "
        + retryTimeout
        + " s, HAProxy check every "
        + checkIntervalMillis
        + " ms (fall 2, rise 1)";
  }
}
