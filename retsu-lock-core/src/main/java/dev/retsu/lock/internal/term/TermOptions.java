package dev.retsu.lock.internal.term;

import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LeaderWatch;
import dev.retsu.lock.internal.TimeSource;
import dev.retsu.lock.internal.session.ServerBounds;
import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;

/**
 * The validated, immutable options every recipe's terms run with, made by the public builders
 * (their shared knobs and one Javadoc each are in {@code TermOptionsBuilder}). Single values are
 * checked as they are set; the rules that tie two values together are checked here, once.
 *
 * @param dataSource where sessions come from
 * @param candidateId this candidate
 * @param refreshInterval between two refreshes of one term
 * @param refreshTimeout the longest one refresh may run
 * @param heartbeatInterval between proofs of a session
 * @param selfFenceAfter the liveness deadline of a session
 * @param bounds the server-side bounds a session carries
 * @param roundTripTimeout the network timeout of the library's round trips
 * @param closeTimeout how long a close waits for a refresh to stop
 * @param failFast whether a failure before the database was ever reached ends the recipe
 * @param listeners what hears the terms
 * @param time the clock
 * @param watch the watch whose changes the listeners hear, or null
 */
public record TermOptions(
    DataSource dataSource,
    String candidateId,
    Duration refreshInterval,
    Duration refreshTimeout,
    Duration heartbeatInterval,
    Duration selfFenceAfter,
    ServerBounds bounds,
    Duration roundTripTimeout,
    Duration closeTimeout,
    boolean failFast,
    List<LeaderListener> listeners,
    TimeSource time,
    LeaderWatch watch) {

  /** Checks what ties the options together. */
  public TermOptions {
    listeners = List.copyOf(listeners);
    bounds.checkDeadline(selfFenceAfter);
    if (heartbeatInterval.multipliedBy(2).compareTo(selfFenceAfter) > 0) {
      throw new IllegalStateException(
          "heartbeatInterval must be at most half of selfFenceAfter ("
              + selfFenceAfter
              + ") so that one slow heartbeat does not fence a healthy leader, but was "
              + heartbeatInterval);
    }
  }
}
