package dev.retsu.lock.quarkus.internal;

import io.quarkus.runtime.annotations.Recorder;
import java.util.Map;

/** Hands what the build found to the running application. */
@Recorder
public class RetsuLockRecorder {

  /**
   * Records the {@code @LeaderOnly} uses, checked when the leaders start.
   *
   * @param sites each use (class, or class#method) and the leader or group it names
   * @param keys each use that names a group's key, and that key
   */
  public void leaderOnlySites(Map<String, String> sites, Map<String, String> keys) {
    LeaderOnlySites.set(sites, keys);
  }
}
