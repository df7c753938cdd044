package dev.retsu.lock.examples.http;

import dev.retsu.lock.AdvisoryLockException;
import dev.retsu.lock.LeaderInfo;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.TakeoverMode;
import dev.retsu.lock.Term;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/** What the management endpoint says about a replica's leader loop. */
public final class LeaderStatus {

  private LeaderStatus() {}

  /**
   * Whether {@code /health/ready} answers 200: only while the loop runs, as leader or standby. A
   * loop that is still {@code NEW}, has {@code FAILED} or is {@code CLOSED} is not ready.
   *
   * @param loop the loop, or null while the replica starts
   * @return true while the loop is {@link LeaderLoop.State#RUNNING}
   */
  public static boolean isReady(LeaderLoop loop) {
    return loop != null && loop.state() == LeaderLoop.State.RUNNING;
  }

  /**
   * The body of {@code /leader}.
   *
   * @param loop the loop
   * @param exportingQueueState whether this replica exports queue gauges now
   * @param interval the retry and refresh interval
   * @param takeover the takeover mode
   * @return a JSON object: role, term, fencing token, the lock's holder, ...
   */
  public static String json(
      LeaderLoop loop, boolean exportingQueueState, Duration interval, TakeoverMode takeover) {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("candidate", loop.candidateId());
    Optional<Term> term = loop.currentTerm();
    String role =
        switch (loop.state()) {
          case NEW -> "starting";
          case CLOSED -> "stopped";
          case FAILED -> "failed";
          default -> loop.isLeader() ? "leader" : "standby";
        };
    out.put("role", role);
    out.put("lock", loop.key().toString());
    out.put("term", term.map(Term::number).orElse(null));
    out.put("fencingToken", term.map(t -> t.fencingToken().toString()).orElse(null));
    out.put("leaderSince", term.map(t -> t.start().toString()).orElse(null));
    out.put("backendPid", term.map(Term::backendPid).orElse(null));
    out.put("exportingQueueState", exportingQueueState);
    try {
      Optional<LeaderInfo> holder = loop.currentHolder();
      out.put(
          "holder",
          holder
              .map(
                  h -> {
                    Map<String, Object> m = new LinkedHashMap<>();
                    m.put("pid", h.pid());
                    m.put("candidate", h.candidateId().isEmpty() ? null : h.candidateId());
                    m.put("fencingToken", h.token().map(Object::toString).orElse(null));
                    m.put("foreign", h.foreign());
                    m.put("database", h.database());
                    return m;
                  })
              .orElse(null));
    } catch (AdvisoryLockException e) {
      out.put("holder", null);
      out.put("holderError", e.getMessage());
    }
    out.put("intervalSeconds", interval.toMillis() / 1000.0);
    out.put("takeover", takeover.name().toLowerCase(Locale.ROOT));
    return Json.object(out);
  }
}
